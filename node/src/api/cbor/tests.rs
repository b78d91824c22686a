//! The codec by table: what each CBOR frame reads as, and what each server message writes.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn cbor(v: &Cbor) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::ser::into_writer(v, &mut out).expect("encode");
    out
}

fn text(s: &str) -> Cbor {
    Cbor::Text(s.into())
}

fn map(entries: Vec<(&str, Cbor)>) -> Cbor {
    Cbor::Map(entries.into_iter().map(|(k, v)| (text(k), v)).collect())
}

/// A request `{jsonrpc, id: 7, method, params}` in CBOR.
fn request(method: &str, params: Cbor) -> Vec<u8> {
    cbor(&map(vec![
        ("jsonrpc", text("2.0")),
        ("id", Cbor::Integer(7.into())),
        ("method", text(method)),
        ("params", params),
    ]))
}

fn params_of(frame: &[u8]) -> Result<Value, DecodeError> {
    decode_request(frame).map(|v| v["params"].clone())
}

fn int(i: i128) -> Cbor {
    Cbor::Integer(i.try_into().expect("in CBOR's range"))
}

#[test]
fn values_become_what_a_json_client_sends() {
    let cases: Vec<(&str, Cbor, Value)> = vec![
        ("null", Cbor::Null, json!(null)),
        ("bool", Cbor::Bool(true), json!(true)),
        ("text", text("héllo\u{1b}"), json!("héllo\u{1b}")),
        ("small int", int(-3), json!(-3)),
        ("i64 min", int(i64::MIN.into()), json!(i64::MIN)),
        ("u64 max", int(u64::MAX.into()), json!(u64::MAX)),
        // Beyond 64 bits: what serde_json reads from the same digits.
        (
            "below i64",
            int(-(1i128 << 64)),
            serde_json::from_str("-18446744073709551616").expect("json"),
        ),
        ("a float", Cbor::Float(1.5), json!(1.5)),
        ("a whole float stays a float", Cbor::Float(1.0), json!(1.0)),
        ("array", Cbor::Array(vec![int(1), text("a")]), json!([1, "a"])),
        (
            "nested map",
            map(vec![("a", map(vec![("b", Cbor::Null)]))]),
            json!({"a": {"b": null}}),
        ),
        (
            "self-described tag",
            Cbor::Tag(TAG_SELF_DESCRIBED, Box::new(text("x"))),
            json!("x"),
        ),
    ];
    for (what, value, want) in cases {
        let got = params_of(&request("node.info", value)).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(got, want, "{what}");
    }
    // A whole float is not an integer, for CBOR as for JSON.
    assert!(decode_request(&request("x", Cbor::Float(1.0))).expect("ok")["params"].is_f64());
}

#[test]
fn a_whole_request_reads_as_json_rpc() {
    let frame = cbor(&Cbor::Tag(
        TAG_SELF_DESCRIBED,
        Box::new(map(vec![
            ("jsonrpc", text("2.0")),
            ("id", text("a")),
            ("method", text("agent.get")),
            ("params", map(vec![("agent", text("bob"))])),
        ])),
    ));
    let v = decode_request(&frame).expect("decodes");
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": "a", "method": "agent.get", "params": {"agent": "bob"}})
    );
    let req: console_api::Request = serde_json::from_value(v).expect("a request");
    assert_eq!(req.id, Some(Id::Str("a".into())));
}

#[test]
fn bignums_are_integers() {
    // Tag 2 over 9 bytes: 2^64 + 1.
    let big = Cbor::Tag(2, Box::new(Cbor::Bytes(vec![1, 0, 0, 0, 0, 0, 0, 0, 1])));
    let got = params_of(&request("x", big)).expect("ok");
    assert_eq!(
        got,
        serde_json::from_str::<Value>("18446744073709551617").expect("json")
    );
    let cases: Vec<(&str, Cbor, Result<Value, &str>)> = vec![
        (
            "a small bignum is exact",
            Cbor::Tag(2, Box::new(Cbor::Bytes(vec![0, 1, 0]))),
            Ok(json!(256)),
        ),
        (
            "a negative bignum",
            Cbor::Tag(3, Box::new(Cbor::Bytes(vec![0xff]))),
            Ok(json!(-256)),
        ),
        (
            "128 bits",
            Cbor::Tag(2, Box::new(Cbor::Bytes(vec![0xff; 16]))),
            Ok(serde_json::from_str("340282366920938463463374607431768211455").expect("json")),
        ),
        (
            "-2^127",
            Cbor::Tag(3, Box::new(Cbor::Bytes([vec![0x7f], vec![0xff; 15]].concat()))),
            Ok(serde_json::from_str("-170141183460469231731687303715884105728").expect("json")),
        ),
        (
            "beyond 128 bits",
            Cbor::Tag(2, Box::new(Cbor::Bytes(vec![1; 17]))),
            Err("beyond 128 bits"),
        ),
        (
            "over a text string",
            Cbor::Tag(2, Box::new(text("12"))),
            Err("must hold a byte string"),
        ),
    ];
    for (what, value, want) in cases {
        match (params_of(&request("x", value)), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{what}"),
            (Err(DecodeError::NoJsonForm { what: msg, .. }), Err(fragment)) => {
                assert!(msg.contains(fragment), "{what}: {msg}")
            }
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

/// `(what, frame, code, message fragment, id kept)`
fn no_json_form_cases() -> Vec<(&'static str, Vec<u8>, i64, &'static str, bool)> {
    vec![
        (
            "integer map key",
            request("agent.get", Cbor::Map(vec![(int(1), text("bob"))])),
            -32602,
            "invalid params: a map key is the integer 1; keys must be text strings",
            true,
        ),
        (
            "bytes map key",
            request(
                "agent.get",
                Cbor::Map(vec![(Cbor::Bytes(b"agent".to_vec()), text("bob"))]),
            ),
            -32602,
            "a map key is a byte string",
            true,
        ),
        (
            "array map key at the top",
            cbor(&Cbor::Map(vec![
                (text("id"), int(7)),
                (Cbor::Array(vec![]), Cbor::Null),
            ])),
            -32600,
            "invalid request: a map key is an array",
            true,
        ),
        (
            "duplicate key",
            request(
                "agent.get",
                Cbor::Map(vec![(text("agent"), text("a")), (text("agent"), text("b"))]),
            ),
            -32602,
            "the key \"agent\" appears twice",
            true,
        ),
        (
            "NaN",
            request("x", map(vec![("n", Cbor::Float(f64::NAN))])),
            -32602,
            "invalid params: n: the float NaN has no JSON form",
            true,
        ),
        (
            "infinity in a list",
            request(
                "x",
                map(vec![("l", Cbor::Array(vec![int(1), Cbor::Float(f64::INFINITY)]))]),
            ),
            -32602,
            "invalid params: l[1]: the float inf has no JSON form",
            true,
        ),
        (
            "a date tag",
            request("x", map(vec![("at", Cbor::Tag(1, Box::new(int(0))))])),
            -32602,
            "invalid params: at: CBOR tag 1 has no JSON form",
            true,
        ),
        (
            "bytes in a text field",
            request("agent.get", map(vec![("agent", Cbor::Bytes(b"bob".to_vec()))])),
            -32602,
            "invalid params: agent: a CBOR byte string (3 bytes) where JSON has no bytes",
            true,
        ),
        (
            "bytes as keys of another method",
            request(
                "conversation.sendMessage",
                map(vec![("keys", Cbor::Bytes(b"x".to_vec()))]),
            ),
            -32602,
            "only conversation.sendKeys' keys may be bytes",
            true,
        ),
        (
            "sendKeys bytes that are not UTF-8",
            request(
                "conversation.sendKeys",
                map(vec![
                    ("conversation", text("c")),
                    ("keys", Cbor::Bytes(vec![b'a', 0xff])),
                ]),
            ),
            -32602,
            "invalid params: keys: the byte string is not UTF-8 (invalid at byte 1)",
            true,
        ),
        (
            "bytes as the method",
            cbor(&map(vec![
                ("id", int(7)),
                ("method", Cbor::Bytes(b"node.info".to_vec())),
            ])),
            -32600,
            "invalid request: method: a CBOR byte string",
            true,
        ),
        (
            "bytes as the params",
            request("node.info", Cbor::Bytes(vec![1])),
            -32602,
            "invalid params: a CBOR byte string",
            true,
        ),
        (
            "an id beyond i64 is not kept",
            cbor(&map(vec![
                ("id", int(u64::MAX.into())),
                ("params", Cbor::Tag(1, Box::new(int(0)))),
            ])),
            -32602,
            "CBOR tag 1",
            false,
        ),
    ]
}

#[test]
fn cbor_without_a_json_form_gets_a_named_error() {
    for (what, frame, code, fragment, id_kept) in no_json_form_cases() {
        let err = decode_request(&frame).expect_err(what);
        let r = err.response();
        let e = r.error.expect("an error");
        assert_eq!(e.code, code, "{what}: {}", e.message);
        assert!(e.message.contains(fragment), "{what}: {}", e.message);
        assert_eq!(r.id.is_some(), id_kept, "{what}: id {:?}", r.id);
        if id_kept {
            assert_eq!(r.id, Some(Id::Num(7)), "{what}");
        }
    }
}

#[test]
fn send_keys_takes_utf8_bytes_as_its_keys() {
    let frame = request(
        "conversation.sendKeys",
        map(vec![
            ("conversation", text("c-1")),
            ("keys", Cbor::Bytes(b"\x1b[Aok\r".to_vec())),
        ]),
    );
    let p = params_of(&frame).expect("decodes");
    assert_eq!(p, json!({"conversation": "c-1", "keys": "\u{1b}[Aok\r"}));
    let keys: console_api::SendKeys = serde_json::from_value(p).expect("the handler's type");
    assert_eq!(keys.keys.as_bytes(), b"\x1b[Aok\r");
    // Text keys work as they do in JSON.
    let frame = request(
        "conversation.sendKeys",
        map(vec![("conversation", text("c-1")), ("keys", text("y"))]),
    );
    assert_eq!(params_of(&frame).expect("decodes")["keys"], "y");
    // Only the top-level `keys`.
    let frame = request(
        "conversation.sendKeys",
        map(vec![("nested", map(vec![("keys", Cbor::Bytes(b"x".to_vec()))]))]),
    );
    assert!(
        matches!(decode_request(&frame), Err(DecodeError::NoJsonForm { path, .. }) if path == "params.nested.keys")
    );
}

#[test]
fn garbled_frames_are_parse_errors() {
    let good = request("node.info", map(vec![]));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "ends inside a CBOR item"),
        ("truncated", good[..good.len() - 3].to_vec(), "ends inside a CBOR item"),
        (
            "trailing bytes",
            [good.clone(), vec![0x00, 0x01]].concat(),
            "2 bytes after the CBOR item",
        ),
        ("a lone break", vec![0xff], "parse error"),
        ("reserved additional info", vec![0x1c], "parse error"),
        ("text that is not UTF-8", vec![0x62, 0xc3, 0x28], "parse error"),
        // An array claiming 2^63 items in a 9-byte frame.
        (
            "huge declared length",
            vec![0x9b, 0x80, 0, 0, 0, 0, 0, 0, 0],
            "parse error",
        ),
        ("JSON text", br#"{"jsonrpc":"2.0"}"#.to_vec(), "parse error"),
    ];
    for (what, frame, fragment) in cases {
        let err = decode_request(&frame).expect_err(what);
        assert!(matches!(err, DecodeError::Parse(_)), "{what}: {err:?}");
        let e = err.response().error.expect("error");
        assert_eq!(e.code, -32700, "{what}");
        assert!(e.message.starts_with("parse error: "), "{what}: {}", e.message);
        assert!(
            e.message.contains(fragment) || fragment == "parse error",
            "{what}: {}",
            e.message
        );
    }
}

#[test]
fn nesting_is_bounded() {
    fn nested(depth: usize) -> Cbor {
        // The request map is level 1, each array one more.
        let mut v = Cbor::Null;
        for _ in 0..depth - 1 {
            v = Cbor::Array(vec![v]);
        }
        map(vec![("jsonrpc", text("2.0")), ("method", text("x")), ("params", v)])
    }
    let v = decode_request(&cbor(&nested(MAX_DEPTH))).expect("at the limit");
    // The JSON text stays readable by the JSON dispatcher.
    let text = serde_json::to_string(&v).expect("json");
    serde_json::from_str::<Value>(&text).expect("serde_json reads it back");

    let err = decode_request(&cbor(&nested(MAX_DEPTH + 1))).expect_err("over the limit");
    assert_eq!(err, DecodeError::TooDeep);
    let e = err.response().error.expect("error");
    assert_eq!(e.code, -32600);
    assert!(e.message.contains("deeper than 64 levels"), "{}", e.message);
    // Tags count as levels too: no stack-deep chain of them.
    let mut tags = Cbor::Null;
    for _ in 0..1_000 {
        tags = Cbor::Tag(1, Box::new(tags));
    }
    assert_eq!(decode_request(&cbor(&tags)), Err(DecodeError::TooDeep));
}

#[test]
fn frames_over_the_limit_name_it() {
    let frame = request("node.info", map(vec![("pad", Cbor::Bytes(vec![0; 200]))]));
    let r = request_text(&frame, 100).expect_err("too large");
    let e = r.error.expect("error");
    assert_eq!(e.code, -32600);
    assert!(
        e.message.contains(&format!(
            "request of {} bytes is over the limit of 100 bytes",
            frame.len()
        )),
        "{}",
        e.message
    );
    let text = request_text(&request("node.info", map(vec![])), 100).expect("fits");
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("json"),
        json!({"jsonrpc": "2.0", "id": 7, "method": "node.info", "params": {}})
    );
}

fn decode_reply(bytes: &[u8]) -> Cbor {
    ciborium::de::from_reader(bytes).expect("valid CBOR")
}

#[test]
fn server_messages_become_cbor() {
    let cases: Vec<(&str, Value, Cbor)> = vec![
        (
            "a response",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"node_id": "n-1", "ok": true, "none": null}}),
            map(vec![
                ("id", int(1)),
                ("jsonrpc", text("2.0")),
                (
                    "result",
                    map(vec![
                        ("node_id", text("n-1")),
                        ("none", Cbor::Null),
                        ("ok", Cbor::Bool(true)),
                    ]),
                ),
            ]),
        ),
        (
            "numbers keep their kind",
            json!({"u": u64::MAX, "i": i64::MIN, "f": 0.25, "whole": 2.0}),
            map(vec![
                ("f", Cbor::Float(0.25)),
                ("i", int(i64::MIN.into())),
                ("u", int(u64::MAX.into())),
                ("whole", Cbor::Float(2.0)),
            ]),
        ),
        (
            "an error with a string id",
            json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "no"}}),
            map(vec![
                ("error", map(vec![("code", int(-32601)), ("message", text("no"))])),
                ("id", text("x")),
                ("jsonrpc", text("2.0")),
            ]),
        ),
        (
            "terminal.data carries bytes",
            json!({"jsonrpc": "2.0", "method": "terminal.data", "params": {"subscription": "s-1", "data": B64.encode(b"\x1b[2Jhi\xff")}}),
            map(vec![
                ("jsonrpc", text("2.0")),
                ("method", text("terminal.data")),
                (
                    "params",
                    map(vec![
                        ("data", Cbor::Bytes(b"\x1b[2Jhi\xff".to_vec())),
                        ("subscription", text("s-1")),
                    ]),
                ),
            ]),
        ),
        (
            "a data field elsewhere stays text",
            json!({"jsonrpc": "2.0", "method": "transcript.event", "params": {"data": "aGk="}}),
            map(vec![
                ("jsonrpc", text("2.0")),
                ("method", text("transcript.event")),
                ("params", map(vec![("data", text("aGk="))])),
            ]),
        ),
        (
            "a response is not terminal.data even when its result looks alike",
            json!({"id": 1, "result": {"method": "terminal.data", "params": {"data": "aGk="}}}),
            map(vec![
                ("id", int(1)),
                (
                    "result",
                    map(vec![
                        ("method", text("terminal.data")),
                        ("params", map(vec![("data", text("aGk="))])),
                    ]),
                ),
            ]),
        ),
    ];
    for (what, json, want) in cases {
        let bytes = encode_message(&json.to_string()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(decode_reply(&bytes), want, "{what}");
    }
    assert!(matches!(encode_message("{not json"), Err(EncodeError::Json(_))));
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON floats are finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map(".*", inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// decode(encode(x)) == x: a message without bytes sent as CBOR reads
    /// back as the JSON its text holds. (That is serde_json's reading of
    /// the text, which may round a float's last bit: the writer reads the
    /// queued text as a JSON client would.)
    #[test]
    fn json_round_trips_through_cbor(params in arb_json(), id in any::<i64>()) {
        let text = json!({"jsonrpc": "2.0", "id": id, "method": "m", "params": params}).to_string();
        let bytes = encode_message(&text).expect("encode");
        let want: Value = serde_json::from_str(&text).expect("json");
        prop_assert_eq!(decode_request(&bytes).expect("decode"), want);
    }
}

#[test]
fn requests_round_trip_through_json() {
    // decode(encode(x)) == x for JSON values that have no bytes.
    let values = [
        json!({"jsonrpc": "2.0", "id": 3, "method": "agent.create", "params": {"name": "a", "harness": "fake", "grants": {"tools": ["mail"], "recall": false}, "budget": {"usd_per_hour": 0.5, "burst_usd": 2}}}),
        json!({"jsonrpc": "2.0", "id": "s", "method": "conversation.list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": -1, "method": "x", "params": {"big": u64::MAX, "neg": i64::MIN, "f": -0.0, "s": "\u{0}\u{7f}é"}}),
    ];
    for v in values {
        let bytes = encode_message(&v.to_string()).expect("encode");
        assert_eq!(decode_request(&bytes).expect("decode"), v);
    }
}
