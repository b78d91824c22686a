// The console's service worker: it shows the node's Web Push messages as
// notifications and answers a held dialog from one. A hold's push carries an
// answer token (a token for that one hold, for at most 15 minutes): its
// Approve and Deny buttons use it, so the phone needs no stored token that
// may answer. Other buttons and a tap on the notification open the console.

const WS_URL = `${self.location.protocol === "https:" ? "wss" : "ws"}://${self.location.host}/v1/ws`;
const ANSWER_TIMEOUT_MS = 15000;

/** Calls `method` after signing in with `token`, on a socket of its own. */
function callWith(token, method, params) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(WS_URL, ["warren.v1.json"]);
    const timer = setTimeout(() => {
      ws.close();
      reject(new Error("the node did not answer"));
    }, ANSWER_TIMEOUT_MS);
    ws.onopen = () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session.authenticate", params: { token } }));
    ws.onerror = () => reject(new Error("cannot reach the node"));
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.id === 1 && msg.error) {
        clearTimeout(timer);
        ws.close();
        reject(new Error(msg.error.message));
      } else if (msg.id === 1) {
        // Signed in: now the call.
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method, params }));
      } else if (msg.id === 2) {
        clearTimeout(timer);
        ws.close();
        if (msg.error) reject(new Error(msg.error.message));
        else resolve(msg.result);
      }
    };
  });
}

function describe(p) {
  const where = p.node ? ` on ${p.node}` : "";
  if (p.kind === "hold") return `${p.hold?.dialog_class || "a dialog"} held for ${p.agent}${where}`;
  return `${p.agent}${where}`;
}

self.addEventListener("push", (event) => {
  let p;
  try {
    p = event.data.json();
  } catch {
    p = { kind: "escalation", title: event.data ? event.data.text() : "an agent needs you" };
  }
  const canAnswer = p.kind === "hold" && p.answer_token && p.hold?.id;
  event.waitUntil(
    self.registration.showNotification(p.title || "an agent needs you", {
      body: describe(p),
      tag: p.hold?.id || `${p.kind}:${p.agent}@${p.node}`,
      data: p,
      requireInteraction: p.kind === "hold",
      actions: canAnswer ? [{ action: "approve", title: "Approve" }, { action: "deny", title: "Deny" }] : [],
    }),
  );
});

/** Approves or denies the hold of notification `n`, then closes it. */
async function answer(n, decision) {
  const p = n.data || {};
  if (!p.answer_token || !p.hold?.id) throw new Error("this notification carries no answer");
  await callWith(p.answer_token, "supervision.answer", { hold: p.hold.id, decision });
  n.close();
  return { hold: p.hold.id, decision };
}

async function openConsole(p) {
  const url = p.kind === "hold" ? "/#/holds" : `/#/chat/${encodeURIComponent(`${p.agent}@${p.node}`)}`;
  const open = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const c of open) {
    if ("focus" in c) {
      await c.navigate?.(url).catch(() => {});
      return c.focus();
    }
  }
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (event) => {
  const n = event.notification;
  if (event.action === "approve" || event.action === "deny") {
    event.waitUntil(answer(n, event.action).catch(() => openConsole(n.data || {})));
  } else {
    n.close();
    event.waitUntil(openConsole(n.data || {}));
  }
});

// The page lists the notifications shown and may act on one as its buttons
// do: {act: "approve" | "deny", tag}. The answer comes back as a message.
self.addEventListener("message", (event) => {
  const { act, tag } = event.data || {};
  if (act !== "approve" && act !== "deny") return;
  const reply = (m) => event.source && event.source.postMessage(m);
  event.waitUntil(
    self.registration
      .getNotifications({ tag })
      .then((ns) => {
        if (!ns.length) throw new Error(`no notification ${tag}`);
        return answer(ns[0], act);
      })
      .then((r) => reply({ answered: r }))
      .catch((e) => reply({ error: String(e.message || e) })),
  );
});

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
