"""A non-member of a warren fleet, on py-libp2p (an independent libp2p).

Given a node's multiaddr (ending /p2p/PEERID) it connects with noise + yamux
only, pings the node, reads its identify, and then tries for more: gossip on
the fleet topic, requests on the fleet protocol (garbage, an oversize frame, a Sync, a Hello
with a garbage certificate), and whatever the node volunteers on that
protocol. It watches for the node dropping it and redials once to see whether
it is blocked. One JSON object on stdout says what it got; logs go to stderr.

Run with the venv of deploy/scripts/fetch-py-libp2p.sh:
    python outsider.py --addr /ip4/10.77.1.11/tcp/7768/p2p/12D3Koo... \
        --topic warren/fleet/FLEETID/v1
"""

import argparse
import importlib.metadata
import json
import logging
import secrets
import sys
import time

import cbor2
import multiaddr
import trio

from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.serialization import deserialize_public_key
from libp2p.crypto.x25519 import create_new_key_pair as create_x25519_key_pair
from libp2p.custom_types import TProtocol
from libp2p.identity.identify.identify import ID as IDENTIFY, parse_identify_response
from libp2p.peer.id import ID
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.pubsub.gossipsub import PROTOCOL_ID, PROTOCOL_ID_V11, PROTOCOL_ID_V12, GossipSub
from libp2p.pubsub.pubsub import Pubsub
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
from libp2p.tools.anyio_service import background_trio_service

FLEET = TProtocol("/warren/fleet/1")
PING = TProtocol("/ipfs/ping/1.0.0")
# Largest answer read on one stream (the node's frames are at most 1 MiB).
MAX_READ = 1 << 20

log = logging.getLogger("outsider")


def ms_since(t0):
    return round((time.monotonic() - t0) * 1000, 1)


def describe(e):
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def cbor_or_hex(data):
    """What arrived: decoded CBOR (as JSON-able values) or the raw bytes in hex."""
    try:
        return {"cbor": json.loads(json.dumps(cbor2.loads(data), default=repr))}
    except Exception:
        return {"hex": data[:256].hex()}


async def read_to_end(stream, timeout):
    """Reads until EOF; returns (bytes, how it ended)."""
    buf = b""
    with trio.move_on_after(timeout) as scope:
        try:
            while len(buf) < MAX_READ:
                chunk = await stream.read(65536)
                if not chunk:
                    return buf, "eof"
                buf += chunk
            return buf, "too-long"
        except Exception as e:
            name = type(e).__name__
            if "EOF" in name:
                return buf, "eof"
            if "Reset" in name:
                return buf, "reset"
            return buf, describe(e)
    assert scope.cancelled_caught
    return buf, "timeout"


async def ping(host, peer, rounds=3):
    stream = await host.new_stream(peer, [PING])
    rtts = []
    try:
        for _ in range(rounds):
            payload = secrets.token_bytes(32)
            t = time.perf_counter()
            await stream.write(payload)
            got = b""
            with trio.fail_after(5):
                while len(got) < 32:
                    chunk = await stream.read(32 - len(got))
                    if not chunk:
                        raise EOFError("the node closed the ping stream")
                    got += chunk
            if got != payload:
                raise ValueError("the pong does not echo the ping")
            rtts.append(round((time.perf_counter() - t) * 1000, 3))
    finally:
        await stream.reset()
    return rtts


async def identify(host, peer):
    stream = await host.new_stream(peer, [IDENTIFY])
    data, ended = await read_to_end(stream, 5)
    msg = parse_identify_response(data)
    return {
        "ended": ended,
        "agent_version": msg.agent_version,
        "protocol_version": msg.protocol_version,
        "peer_id": str(ID.from_pubkey(deserialize_public_key(msg.public_key))),
        "protocols": sorted(msg.protocols),
        "listen_addrs": [str(multiaddr.Multiaddr(a)) for a in msg.listen_addrs],
        "observed_addr": str(multiaddr.Multiaddr(msg.observed_addr)) if msg.observed_addr else None,
    }


async def fleet_request(host, peer, payload):
    """One request on the fleet protocol, framed as rust's CBOR codec frames
    it (the bytes, then a half-close); what came back, and how it ended."""
    try:
        stream = await host.new_stream(peer, [FLEET])
    except Exception as e:
        return {"opened": False, "error": describe(e)}
    try:
        await stream.write(payload)
        await stream.close_write()
    except Exception as e:
        return {"opened": True, "sent": False, "error": describe(e)}
    data, ended = await read_to_end(stream, 4)
    out = {"opened": True, "sent": True, "ended": ended, "answer_bytes": len(data)}
    if data:
        out["answer"] = cbor_or_hex(data)
    return out


def garbage_cert(peer_id):
    return {
        "fleet_id": "0" * 16,
        "node_id": "n-outsider",
        "peer_id": peer_id,
        "issued_at": int(time.time() * 1000),
        "signature": "00" * 64,
    }


async def main(args):
    report = {"libp2p_version": importlib.metadata.version("libp2p")}
    key_pair = create_new_key_pair()
    host = new_host(
        key_pair=key_pair,
        sec_opt={NOISE: Noise(key_pair, noise_privkey=create_x25519_key_pair().private_key)},
        muxer_opt={YAMUX: Yamux},
    )
    me = str(host.get_id())
    report["outsider_peer_id"] = me
    info = info_from_p2p_addr(multiaddr.Multiaddr(args.addr))
    node = info.peer_id

    # What the node volunteers on the fleet protocol: recorded, never answered.
    inbound = []

    async def on_fleet(stream):
        data, ended = await read_to_end(stream, 3)
        inbound.append({"ended": ended, "bytes": len(data), **cbor_or_hex(data)})
        await stream.reset()

    host.set_stream_handler(FLEET, on_fleet)

    gossipsub = GossipSub(
        protocols=[PROTOCOL_ID_V12, PROTOCOL_ID_V11, PROTOCOL_ID],
        degree=2,
        degree_low=1,
        degree_high=4,
        heartbeat_interval=1,
    )
    pubsub = Pubsub(host, gossipsub)
    # Everything gossipsub hands us from the node: messages and control.
    gossip = {"messages": [], "control": []}
    push_msg = pubsub.push_msg

    async def counting_push(src, msg):
        gossip["messages"].append({"from": str(src), "topics": list(msg.topicIDs), "bytes": len(msg.data)})
        await push_msg(src, msg)

    pubsub.push_msg = counting_push
    handle_rpc = gossipsub.handle_rpc

    async def counting_rpc(rpc, sender):
        c = rpc.control
        kinds = {
            "ihave": len(c.ihave),
            "iwant": len(c.iwant),
            "graft": len(c.graft),
            "prune": len(c.prune),
            "idontwant": len(c.idontwant) if hasattr(c, "idontwant") else 0,
        }
        if any(kinds.values()):
            gossip["control"].append({k: v for k, v in kinds.items() if v})
        await handle_rpc(rpc, sender)

    gossipsub.handle_rpc = counting_rpc

    async with host.run(listen_addrs=[multiaddr.Multiaddr("/ip4/0.0.0.0/tcp/0")]):
        async with background_trio_service(pubsub), background_trio_service(gossipsub):
            await pubsub.wait_until_ready()
            sub = await pubsub.subscribe(args.topic)

            t0 = time.monotonic()
            deadline = t0 + args.connect_within
            while True:
                try:
                    await host.connect(info)
                    break
                except Exception as e:
                    if time.monotonic() > deadline:
                        report["connect"] = {"ok": False, "error": describe(e)}
                        print(json.dumps(report))
                        return
                    await trio.sleep(0.2)
            t0 = time.monotonic()
            report["connect"] = {"ok": True}
            log.info("connected to %s", node)

            try:
                rtts = await ping(host, node)
                report["ping"] = {"ok": True, "rtts_ms": rtts}
            except Exception as e:
                report["ping"] = {"ok": False, "error": describe(e)}
            try:
                report["identify"] = {"ok": True, **(await identify(host, node))}
            except Exception as e:
                report["identify"] = {"ok": False, "error": describe(e)}

            probes = {}
            probes["garbage"] = await fleet_request(host, node, b"\xff\x00 not cbor at all")
            # Over the node's 1 MiB frame limit.
            probes["oversize"] = await fleet_request(host, node, b"\x78" + b"x" * (1024 * 1024 + 64))
            empty_view = {"records": [], "members": [], "removed": []}
            probes["sync"] = await fleet_request(host, node, cbor2.dumps({"Sync": empty_view}))
            # Let gossip flow (if it would) while we are still connected.
            await trio.sleep(max(0.0, args.listen_before_hello - (time.monotonic() - t0)))
            report["hello_sent_at_ms"] = ms_since(t0)
            probes["hello"] = await fleet_request(
                host, node, cbor2.dumps({"Hello": {"cert": garbage_cert(me)}})
            )
            report["fleet_requests"] = probes

            # Dropped by the node within a few seconds?
            dropped = None
            with trio.move_on_after(args.drop_within):
                while host.get_network().get_connections(node):
                    await trio.sleep(0.05)
                dropped = ms_since(t0)
            report["disconnected"] = {"ok": dropped is not None, "after_ms": dropped}

            # Whatever reached the subscription (nothing, if gossip is shut).
            received = []
            while True:
                with trio.move_on_after(0.05):
                    m = await sub.get()
                    received.append({"topics": list(m.topicIDs), "bytes": len(m.data)})
                    continue
                break
            gossip["delivered"] = received
            gossip["node_topics"] = sorted(t for t, peers in pubsub.peer_topics.items() if node in peers)
            report["gossip"] = gossip
            report["inbound_fleet"] = list(inbound)

            # Blocked: a redial gets no working connection.
            redial = {}
            try:
                with trio.fail_after(10):
                    await host.connect(info)
                redial["connected"] = True
                try:
                    redial["ping_rtts_ms"] = await ping(host, node, rounds=1)
                except Exception as e:
                    redial["ping_error"] = describe(e)
            except Exception as e:
                redial["connected"] = False
                redial["error"] = describe(e)
            report["redial"] = redial
            report["total_ms"] = ms_since(t0)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--addr", required=True, help="the node's multiaddr, ending /p2p/PEERID")
    p.add_argument("--topic", required=True, help="the fleet's gossip topic")
    p.add_argument("--connect-within", type=float, default=15.0, help="seconds to keep dialing")
    p.add_argument("--listen-before-hello", type=float, default=1.5, help="seconds connected before the hello")
    p.add_argument("--drop-within", type=float, default=8.0, help="seconds to wait for the node to drop us")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="outsider: %(name)s: %(message)s")
    log.setLevel(logging.INFO)
    trio.run(main, args)
