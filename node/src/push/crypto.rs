//! Web Push's cryptography, pure: a message encrypted for one subscription
//! (RFC 8291, `aes128gcm` of RFC 8188 in a single record) and the node's
//! VAPID identity (RFC 8292: an ES256 JWT signed with a P-256 key whose
//! public half browsers are given as the `applicationServerKey`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use ring::{aead, agreement, hkdf};
use serde_json::{Value, json};

/// An uncompressed P-256 point: 0x04, X, Y.
pub const P256_POINT: usize = 65;
/// The subscription's authentication secret.
pub const AUTH_SECRET: usize = 16;
/// The record size written in the header (one record holds the message).
const RECORD_SIZE: u32 = 4096;
/// Header: salt (16), record size (4), key id length (1), key id (65).
const HEADER: usize = 16 + 4 + 1 + P256_POINT;
/// The most a payload may be: the body stays within the 4,096 bytes every
/// push service must take (header, the delimiter byte and the 16-byte tag).
pub const MAX_PAYLOAD: usize = 4096 - HEADER - 1 - 16;

/// A subscription's keys, as the browser gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    pub p256dh: [u8; P256_POINT],
    pub auth: [u8; AUTH_SECRET],
}

impl Keys {
    /// Reads `keys.p256dh` and `keys.auth` (base64url), naming what is wrong.
    pub fn parse(p256dh: &str, auth: &str) -> Result<Keys, String> {
        let point = decode(p256dh).map_err(|e| format!("keys.p256dh: {e}"))?;
        let point: [u8; P256_POINT] = point.try_into().map_err(|v: Vec<u8>| {
            format!(
                "keys.p256dh: {} bytes; a P-256 public key is {P256_POINT} (uncompressed)",
                v.len()
            )
        })?;
        let secret = decode(auth).map_err(|e| format!("keys.auth: {e}"))?;
        let secret: [u8; AUTH_SECRET] = secret
            .try_into()
            .map_err(|v: Vec<u8>| format!("keys.auth: {} bytes; the auth secret is {AUTH_SECRET}", v.len()))?;
        // A point off the curve fails the agreement: try one now.
        let rng = SystemRandom::new();
        let probe = agreement::EphemeralPrivateKey::generate(&agreement::ECDH_P256, &rng)
            .map_err(|_| "keys.p256dh: no randomness to check it with".to_string())?;
        agreement::agree_ephemeral(
            probe,
            &agreement::UnparsedPublicKey::new(&agreement::ECDH_P256, &point[..]),
            |_| (),
        )
        .map_err(|_| "keys.p256dh: not a point on the P-256 curve".to_string())?;
        Ok(Keys {
            p256dh: point,
            auth: secret,
        })
    }
}

/// base64url, padded or not (browsers give it unpadded).
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    B64.decode(text.trim().trim_end_matches('='))
        .map_err(|e| format!("not base64url ({e})"))
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn expand(prk: &hkdf::Prk, info: &[&[u8]], n: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0; n];
    prk.expand(info, Len(n))
        .and_then(|okm| okm.fill(&mut out))
        .map_err(|_| "hkdf: expand failed".to_string())?;
    Ok(out)
}

/// The input keying material both sides derive from the shared secret.
fn ikm(ecdh: &[u8], auth: &[u8], ua_public: &[u8], as_public: &[u8]) -> Result<Vec<u8>, String> {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, auth).extract(ecdh);
    expand(&prk, &[b"WebPush: info\0", ua_public, as_public], 32)
}

/// The content-encryption key and nonce of RFC 8188 for `salt`.
fn key_and_nonce(salt: &[u8], ikm: &[u8]) -> Result<(aead::LessSafeKey, aead::Nonce), String> {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(ikm);
    let cek = expand(&prk, &[b"Content-Encoding: aes128gcm\0"], 16)?;
    let nonce = expand(&prk, &[b"Content-Encoding: nonce\0"], 12)?;
    let key = aead::UnboundKey::new(&aead::AES_128_GCM, &cek).map_err(|_| "aes: bad key".to_string())?;
    let nonce = aead::Nonce::try_assume_unique_for_key(&nonce).map_err(|_| "aes: bad nonce".to_string())?;
    Ok((aead::LessSafeKey::new(key), nonce))
}

/// `plaintext` encrypted for the subscription `to`: the body of the POST.
pub fn encrypt(plaintext: &[u8], to: &Keys) -> Result<Vec<u8>, String> {
    if plaintext.len() > MAX_PAYLOAD {
        return Err(format!(
            "payload: {} bytes; a push carries at most {MAX_PAYLOAD}",
            plaintext.len()
        ));
    }
    let rng = SystemRandom::new();
    let mine = agreement::EphemeralPrivateKey::generate(&agreement::ECDH_P256, &rng).map_err(|_| "no randomness")?;
    let as_public = mine.compute_public_key().map_err(|_| "ecdh: no public key")?;
    let theirs = agreement::UnparsedPublicKey::new(&agreement::ECDH_P256, &to.p256dh[..]);
    let ikm = agreement::agree_ephemeral(mine, &theirs, |secret| {
        ikm(secret, &to.auth, &to.p256dh, as_public.as_ref())
    })
    .map_err(|_| "ecdh: the subscription's key does not agree".to_string())??;
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| "no randomness")?;
    let (key, nonce) = key_and_nonce(&salt, &ikm)?;
    let mut record = Vec::with_capacity(plaintext.len() + 17);
    record.extend_from_slice(plaintext);
    // The last (and only) record's delimiter; no padding.
    record.push(2);
    key.seal_in_place_append_tag(nonce, aead::Aad::empty(), &mut record)
        .map_err(|_| "aes: seal failed".to_string())?;
    let mut body = Vec::with_capacity(HEADER + record.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(P256_POINT as u8);
    body.extend_from_slice(as_public.as_ref());
    body.extend_from_slice(&record);
    Ok(body)
}

/// Decrypts a body as the subscriber does, with its private key (an
/// ephemeral ring key, so once), its public key and its auth secret.
pub fn decrypt(
    body: &[u8],
    ua_private: agreement::EphemeralPrivateKey,
    ua_public: &[u8],
    auth: &[u8],
) -> Result<Vec<u8>, String> {
    if body.len() < HEADER + 17 {
        return Err(format!("body: {} bytes, shorter than a header and a tag", body.len()));
    }
    let (salt, rest) = body.split_at(16);
    let id_len = rest[4] as usize;
    if id_len != P256_POINT {
        return Err(format!(
            "header: key id of {id_len} bytes; the sender's key is {P256_POINT}"
        ));
    }
    let as_public = &rest[5..5 + id_len];
    let ikm = agreement::agree_ephemeral(
        ua_private,
        &agreement::UnparsedPublicKey::new(&agreement::ECDH_P256, as_public),
        |secret| ikm(secret, auth, ua_public, as_public),
    )
    .map_err(|_| "ecdh: the sender's key does not agree".to_string())??;
    let (key, nonce) = key_and_nonce(salt, &ikm)?;
    let mut record = rest[5 + id_len..].to_vec();
    let plain = key
        .open_in_place(nonce, aead::Aad::empty(), &mut record)
        .map_err(|_| "aes: the record does not open (wrong keys or altered)".to_string())?;
    let end = plain.iter().rposition(|b| *b != 0).ok_or("record: no delimiter")?;
    if plain[end] != 2 {
        return Err("record: not the last record (delimiter 2 missing)".into());
    }
    Ok(plain[..end].to_vec())
}

/// The node's VAPID key.
pub struct Vapid {
    key: EcdsaKeyPair,
    public: String,
}

impl Vapid {
    /// A new key, as PKCS#8 (what the node stores).
    pub fn generate() -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map(|doc| doc.as_ref().to_vec())
            .map_err(|_| "vapid: could not generate a key".to_string())
    }

    /// The key stored as PKCS#8.
    pub fn from_pkcs8(der: &[u8]) -> Result<Vapid, String> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| format!("vapid: the stored key does not read ({e})"))?;
        let public = B64.encode(key.public_key().as_ref());
        Ok(Vapid { key, public })
    }

    /// The public key, base64url (`node.info`'s `vapid_public_key`).
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push service at `origin`
    /// (`scheme://host[:port]`): `vapid t=JWT, k=KEY`.
    pub fn authorization(&self, origin: &str, subject: &str, expires_unix: u64) -> Result<String, String> {
        let header = B64.encode(json!({ "typ": "JWT", "alg": "ES256" }).to_string());
        let claims = B64.encode(json!({ "aud": origin, "exp": expires_unix, "sub": subject }).to_string());
        let signed = format!("{header}.{claims}");
        let sig = self
            .key
            .sign(&SystemRandom::new(), signed.as_bytes())
            .map_err(|_| "vapid: signing failed".to_string())?;
        Ok(format!(
            "vapid t={signed}.{}, k={}",
            B64.encode(sig.as_ref()),
            self.public
        ))
    }
}

/// Checks a VAPID `Authorization` header as a push service does: the JWT's
/// ES256 signature by the key `k` names; returns (its claims, `k`).
pub fn verify_authorization(header: &str) -> Result<(Value, String), String> {
    let rest = header.strip_prefix("vapid ").ok_or("not a vapid authorization")?;
    let (mut token, mut key) = (None, None);
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(t) = part.strip_prefix("t=") {
            token = Some(t);
        } else if let Some(k) = part.strip_prefix("k=") {
            key = Some(k);
        }
    }
    let (token, key) = (token.ok_or("no t=")?, key.ok_or("no k=")?);
    let mut parts = token.split('.');
    let (h, c, s) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(c), Some(s), None) => (h, c, s),
        _ => return Err("the JWT is not three parts".into()),
    };
    let head: Value = serde_json::from_slice(&decode(h)?).map_err(|e| format!("JWT header: {e}"))?;
    if head["alg"] != "ES256" {
        return Err(format!("JWT alg {}: not ES256", head["alg"]));
    }
    let public = decode(key)?;
    signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &public)
        .verify(format!("{h}.{c}").as_bytes(), &decode(s)?)
        .map_err(|_| "the JWT's signature does not verify with k".to_string())?;
    let claims = serde_json::from_slice(&decode(c)?).map_err(|e| format!("JWT claims: {e}"))?;
    Ok((claims, key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber() -> (agreement::EphemeralPrivateKey, Keys) {
        let rng = SystemRandom::new();
        let private = agreement::EphemeralPrivateKey::generate(&agreement::ECDH_P256, &rng).unwrap();
        let public = private.compute_public_key().unwrap();
        let mut auth = [0u8; 16];
        rng.fill(&mut auth).unwrap();
        let keys = Keys::parse(&B64.encode(public.as_ref()), &B64.encode(auth)).unwrap();
        (private, keys)
    }

    #[test]
    fn a_message_opens_with_the_subscribers_keys_only() {
        let (private, keys) = subscriber();
        let body = encrypt(br#"{"kind":"hold"}"#, &keys).unwrap();
        assert_eq!(&body[16..20], &4096u32.to_be_bytes());
        assert_eq!(body[20] as usize, P256_POINT);
        let plain = decrypt(&body, private, &keys.p256dh, &keys.auth).unwrap();
        assert_eq!(plain, br#"{"kind":"hold"}"#);

        // Another subscriber's key, or an altered byte, does not open it.
        let (other, other_keys) = subscriber();
        assert!(decrypt(&body, other, &other_keys.p256dh, &keys.auth).is_err());
        let (private, keys) = subscriber();
        let mut body = encrypt(b"x", &keys).unwrap();
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(decrypt(&body, private, &keys.p256dh, &keys.auth).is_err());
    }

    #[test]
    fn every_message_has_its_own_salt_and_sender_key() {
        let (_, keys) = subscriber();
        let (a, b) = (encrypt(b"same", &keys).unwrap(), encrypt(b"same", &keys).unwrap());
        assert_ne!(a[..16], b[..16]);
        assert_ne!(a[21..86], b[21..86]);
    }

    #[test]
    fn payload_size_is_bounded() {
        let (_, keys) = subscriber();
        assert_eq!(encrypt(&vec![b'a'; MAX_PAYLOAD], &keys).unwrap().len(), 4096);
        let e = encrypt(&vec![b'a'; MAX_PAYLOAD + 1], &keys).unwrap_err();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn bad_keys_are_named() {
        let (_, keys) = subscriber();
        let point = B64.encode(keys.p256dh);
        let auth = B64.encode(keys.auth);
        let cases = [
            (B64.encode([4u8; 33]), auth.clone(), "keys.p256dh: 33 bytes"),
            (point.clone(), B64.encode([1u8; 15]), "keys.auth: 15 bytes"),
            ("***".to_string(), auth.clone(), "keys.p256dh: not base64url"),
            (B64.encode([4u8; 65]), auth.clone(), "not a point"),
        ];
        for (p, a, want) in cases {
            let e = Keys::parse(&p, &a).unwrap_err();
            assert!(e.contains(want), "{p}/{a}: {e}");
        }
        // Padded base64url reads too.
        assert_eq!(Keys::parse(&format!("{point}="), &format!("{auth}==")).unwrap(), keys);
    }

    #[test]
    fn the_vapid_jwt_verifies_with_the_published_key() {
        let vapid = Vapid::from_pkcs8(&Vapid::generate().unwrap()).unwrap();
        assert_eq!(decode(vapid.public_key()).unwrap().len(), P256_POINT);
        let header = vapid
            .authorization("https://push.example", "mailto:owner@example.org", 1_900_000_000)
            .unwrap();
        let (claims, k) = verify_authorization(&header).unwrap();
        assert_eq!(k, vapid.public_key());
        assert_eq!(claims["aud"], "https://push.example");
        assert_eq!(claims["exp"], 1_900_000_000u64);
        // Another key's claim to it fails.
        let other = Vapid::from_pkcs8(&Vapid::generate().unwrap()).unwrap();
        let forged = header.replace(vapid.public_key(), other.public_key());
        assert!(verify_authorization(&forged).is_err());
    }
}
