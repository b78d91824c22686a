// The console's one connection to the node: JSON-RPC 2.0 over /v1/ws on the
// page's own origin. It signs in with session.authenticate (the token is sent
// in a frame, never in a URL), shows its state, and reconnects with backoff;
// views listen for "up" to resume their streams from their cursors.

export const WS_URL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 8000;
const CALL_TIMEOUT_MS = 15000;

/** An error answer (or a transport failure, code "offline"). */
export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

/** One request on a socket that is opened for it and closed after. */
export function callOnce(method, params) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(WS_URL, ["warren.v1.json"]);
    const fail = (e) => {
      ws.close();
      reject(e);
    };
    const timer = setTimeout(() => fail(new RpcError("offline", "the node did not answer")), CALL_TIMEOUT_MS);
    ws.onopen = () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
    ws.onerror = () => fail(new RpcError("offline", "cannot reach the node"));
    ws.onmessage = (m) => {
      clearTimeout(timer);
      const msg = JSON.parse(m.data);
      ws.close();
      if (msg.error) reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
      else resolve(msg.result);
    };
  });
}

/**
 * The signed-in connection. Events: "state" (detail: connecting | online |
 * reconnecting | signed-out), "up" (after every successful sign-in, the first
 * included), "note" (detail: {method, params}) for notifications.
 */
export class Rpc extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
    this.state = "connecting";
    this.nextId = 1;
    this.pending = new Map();
    this.subs = new Map();
    this.backoff = BACKOFF_MIN_MS;
    this.stopped = false;
    this.ws = null;
    this.reconnects = 0;
    this.bytesIn = 0;
    this.bytesOut = 0;
  }

  start() {
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.ws) this.ws.close();
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.dispatchEvent(new CustomEvent("state", { detail: s }));
  }

  connect() {
    this.setState(this.reconnects ? "reconnecting" : "connecting");
    const ws = new WebSocket(WS_URL, ["warren.v1.json"]);
    this.ws = ws;
    ws.onopen = async () => {
      try {
        await this.send(ws, "session.authenticate", { token: this.token });
      } catch (e) {
        if (e.code === -32001) {
          this.stopped = true;
          this.setState("signed-out");
          ws.close();
        }
        return;
      }
      this.backoff = BACKOFF_MIN_MS;
      this.setState("online");
      this.dispatchEvent(new Event("up"));
    };
    ws.onmessage = (m) => {
      this.bytesIn += m.data.length;
      this.receive(m.data);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const [, p] of this.pending) p.reject(new RpcError("offline", "connection lost"));
      this.pending.clear();
      // Subscriptions end with their connection; views resubscribe on "up".
      this.subs.clear();
      if (this.stopped) return;
      this.reconnects += 1;
      this.setState("reconnecting");
      const wait = this.backoff * (0.75 + Math.random() / 2);
      this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
      setTimeout(() => this.connect(), wait);
    };
  }

  receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (msg.id != null && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
      else p.resolve(msg.result);
      return;
    }
    if (msg.method) {
      const handler = msg.params && this.subs.get(msg.params.subscription);
      if (handler) handler(msg.method, msg.params);
      this.dispatchEvent(new CustomEvent("note", { detail: msg }));
    }
  }

  send(ws, method, params) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RpcError("offline", `${method}: no answer`));
      }, CALL_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      const text = JSON.stringify({ jsonrpc: "2.0", id, method, params: params || {} });
      this.bytesOut += text.length;
      ws.send(text);
    });
  }

  /** Calls `method`; rejects with RpcError (code "offline" when not connected). */
  call(method, params) {
    if (this.state !== "online" || !this.ws) {
      return Promise.reject(new RpcError("offline", "not connected"));
    }
    return this.send(this.ws, method, params);
  }

  /** Subscribes; `onNote(method, params)` gets its notifications. */
  async subscribe(method, params, onNote) {
    const r = await this.call(method, params);
    this.subs.set(r.subscription, onNote);
    return r.subscription;
  }

  /** Cancels a subscription of this connection (errors are ignored). */
  cancel(sub) {
    if (!sub || !this.subs.has(sub)) return;
    this.subs.delete(sub);
    this.call("subscription.cancel", { subscription: sub }).catch(() => {});
  }
}
