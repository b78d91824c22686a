// "Notify me": the console's service worker (sw.js) is registered and the
// browser subscribed to this node's Web Push (push.subscribe with the node's
// VAPID key from node.info), so a needs-you anywhere in the fleet reaches the
// phone with the page closed. A browser without a reachable push service
// keeps in-page notifications only, and says so.

const SW_URL = "/assets/sw.js";
// A browser whose push service cannot be reached may never answer.
const SUBSCRIBE_WITHIN_MS = 8000;

function within(ms, promise, what) {
  return Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms))]);
}

function bytesOf(b64url) {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** The worker's registration (registered on first use). */
export async function worker() {
  if (!("serviceWorker" in navigator)) throw new Error("this browser has no service workers");
  await navigator.serviceWorker.register(SW_URL, { scope: "/assets/" });
  return navigator.serviceWorker.getRegistration("/assets/");
}

/** Asks for permission and subscribes; what happened, in words. */
export async function enablePush(ctx) {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") return "notifications are blocked for this page";
  let reg;
  try {
    reg = await within(SUBSCRIBE_WITHIN_MS, worker(), "the service worker");
  } catch (e) {
    return `no service worker: ${e.message}`;
  }
  try {
    const info = await ctx.rpc.call("node.info", {});
    const key = bytesOf(info.vapid_public_key);
    const sub =
      (await reg.pushManager.getSubscription()) ||
      (await within(SUBSCRIBE_WITHIN_MS, reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }), "the push service"));
    await ctx.rpc.call("push.subscribe", sub.toJSON());
    return "push on: this phone is told when an agent needs you";
  } catch (e) {
    return `no push service reachable (${e.message}): notifications only while this page is open`;
  }
}

/** Acts on the shown notification `tag` as its button would. */
export async function act(tag, decision) {
  const reg = await worker();
  const active = reg.active || (await navigator.serviceWorker.ready).active;
  return new Promise((resolve) => {
    const channel = (ev) => {
      navigator.serviceWorker.removeEventListener("message", channel);
      resolve(ev.data);
    };
    navigator.serviceWorker.addEventListener("message", channel);
    navigator.serviceWorker.startMessages();
    active.postMessage({ act: decision, tag });
  });
}
