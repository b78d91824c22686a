"""An independent reading of a Web Push as a browser and a push service
would: Python's `cryptography` (not the node's ring) decrypts an RFC 8291
aes128gcm body with the subscriber's private key and checks the RFC 8292
VAPID JWT's ES256 signature with the key it names.

  oracle.py keys   -> {"private", "p256dh", "auth"} (base64url)
  oracle.py open   <- {"private", "p256dh", "auth", "body", "authorization"}
                   -> {"payload", "claims", "header", "k", "rs"}
"""
import base64
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hkdf(salt, ikm, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def keys():
    k = ec.generate_private_key(ec.SECP256R1())
    public = k.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    private = k.private_numbers().private_value.to_bytes(32, "big")
    return {"private": b64e(private), "p256dh": b64e(public), "auth": b64e(os.urandom(16))}


def open_push(req):
    private = ec.derive_private_key(int.from_bytes(b64d(req["private"]), "big"), ec.SECP256R1())
    body = b64d(req["body"])
    salt, rs, id_len = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    sender = body[21 : 21 + id_len]
    record = body[21 + id_len :]
    ecdh = private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender))
    ua_public = b64d(req["p256dh"])
    ikm = hkdf(b64d(req["auth"]), ecdh, b"WebPush: info\x00" + ua_public + sender, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    plain = AESGCM(cek).decrypt(nonce, record, None).rstrip(b"\x00")
    if not plain or plain[-1] != 2:
        raise SystemExit("no last-record delimiter")
    auth = req["authorization"]
    if not auth.startswith("vapid "):
        raise SystemExit("not a vapid authorization: " + auth)
    parts = dict(p.strip().split("=", 1) for p in auth[len("vapid ") :].split(","))
    head, claims, sig = parts["t"].split(".")
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(parts["k"]))
    raw = b64d(sig)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.verify(der, (head + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))
    return {
        "payload": json.loads(plain[:-1]),
        "claims": json.loads(b64d(claims)),
        "header": json.loads(b64d(head)),
        "k": parts["k"],
        "rs": rs,
    }


if __name__ == "__main__":
    if sys.argv[1] == "keys":
        print(json.dumps(keys()))
    else:
        print(json.dumps(open_push(json.load(sys.stdin))))
