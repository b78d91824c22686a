//! The `warren.v1.cbor` subprotocol on a real node over a real WebSocket: a
//! CBOR client gets the same answers as CBOR items in binary frames (terminal
//! output as byte strings), errors included, while JSON clients on the same
//! node see exactly what they saw before.

mod support;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use base64::Engine;
use ciborium::Value as Cbor;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use support::*;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use warren::client::{Client, Target};

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const CBOR: &str = "warren.v1.cbor";
const JSON: &str = "warren.v1.json";

/// Opens `/v1/ws` (with the target's token, if any) offering `protocols`;
/// returns the socket and the subprotocol the node selected.
async fn open(target: &Target, protocols: Option<&str>) -> (Ws, Option<String>) {
    let mut req = target.url.as_str().into_client_request().expect("request");
    if let Some(t) = &target.token {
        req.headers_mut()
            .insert("Authorization", format!("Bearer {t}").parse().expect("header"));
    }
    if let Some(p) = protocols {
        req.headers_mut()
            .insert("Sec-WebSocket-Protocol", p.parse().expect("header"));
    }
    let (ws, resp) = tokio_tungstenite::connect_async(req).await.expect("upgrade");
    let selected = resp
        .headers()
        .get("sec-websocket-protocol")
        .map(|v| v.to_str().expect("ascii").to_string());
    (ws, selected)
}

fn cbor(v: serde_json::Value) -> Cbor {
    Cbor::serialized(&v).expect("JSON as CBOR")
}

fn encode(v: &Cbor) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::ser::into_writer(v, &mut out).expect("encode");
    out
}

/// `map[key]`, which must be there.
fn get<'a>(map: &'a Cbor, key: &str) -> &'a Cbor {
    map.as_map()
        .unwrap_or_else(|| panic!("not a map: {map:?}"))
        .iter()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {key:?} in {map:?}"))
}

fn has(map: &Cbor, key: &str) -> bool {
    map.as_map()
        .is_some_and(|m| m.iter().any(|(k, _)| k.as_text() == Some(key)))
}

fn text(v: &Cbor) -> &str {
    v.as_text().unwrap_or_else(|| panic!("not a text string: {v:?}"))
}

fn int(v: &Cbor) -> i128 {
    i128::from(v.as_integer().unwrap_or_else(|| panic!("not an integer: {v:?}")))
}

/// An error answer: `(code, message)`.
#[derive(Debug)]
struct RpcErr {
    code: i128,
    message: String,
}

/// A client speaking `warren.v1.cbor`.
struct CborClient {
    ws: Ws,
    next_id: i64,
    notes: VecDeque<Cbor>,
}

impl CborClient {
    /// Connects asking for CBOR and checks the node selected it.
    async fn connect(target: &Target) -> CborClient {
        let (ws, selected) = open(target, Some(CBOR)).await;
        assert_eq!(selected.as_deref(), Some(CBOR), "the node selects the CBOR subprotocol");
        CborClient {
            ws,
            next_id: 1,
            notes: VecDeque::new(),
        }
    }

    async fn send(&mut self, frame: Message) {
        self.ws.send(frame).await.expect("send");
    }

    /// The next message from the node: exactly one CBOR item in a binary frame.
    async fn read(&mut self) -> Cbor {
        let next = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Binary(b))) => {
                        let mut rest = &b[..];
                        let item: Cbor = ciborium::de::from_reader(&mut rest).expect("one CBOR item");
                        assert!(rest.is_empty(), "{} bytes after the CBOR item", rest.len());
                        return item;
                    }
                    Some(Ok(Message::Text(t))) => panic!("a text frame on the CBOR subprotocol: {t}"),
                    Some(Ok(Message::Close(f))) => panic!("the node closed the connection: {f:?}"),
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => panic!("read: {e}"),
                    None => panic!("the connection ended"),
                }
            }
        });
        next.await.expect("an answer within 20 s")
    }

    /// Reads until the response with this id (`None`: an id-less error
    /// answer); notifications on the way are kept.
    async fn response(&mut self, id: Option<i64>) -> Result<Cbor, RpcErr> {
        loop {
            let msg = self.read().await;
            if !has(&msg, "id") {
                self.notes.push_back(msg);
                continue;
            }
            let got = match get(&msg, "id") {
                Cbor::Null => None,
                v => Some(int(v)),
            };
            if got != id.map(i128::from) {
                continue;
            }
            assert_eq!(text(get(&msg, "jsonrpc")), "2.0");
            if has(&msg, "error") {
                let e = get(&msg, "error");
                return Err(RpcErr {
                    code: int(get(e, "code")),
                    message: text(get(e, "message")).to_string(),
                });
            }
            return Ok(get(&msg, "result").clone());
        }
    }

    async fn request(&mut self, method: &str, params: Cbor) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let req = Cbor::Map(vec![
            (Cbor::Text("jsonrpc".into()), Cbor::Text("2.0".into())),
            (Cbor::Text("id".into()), Cbor::Integer(id.into())),
            (Cbor::Text("method".into()), Cbor::Text(method.into())),
            (Cbor::Text("params".into()), params),
        ]);
        self.send(Message::Binary(encode(&req).into())).await;
        id
    }

    async fn call(&mut self, method: &str, params: Cbor) -> Result<Cbor, RpcErr> {
        let id = self.request(method, params).await;
        self.response(Some(id)).await
    }

    async fn ok(&mut self, method: &str, params: Cbor) -> Cbor {
        self.call(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method} failed: {e:?}"))
    }

    async fn err(&mut self, method: &str, params: Cbor) -> RpcErr {
        match self.call(method, params).await {
            Ok(v) => panic!("{method} should have failed, got {v:?}"),
            Err(e) => e,
        }
    }

    /// The next notification.
    async fn notification(&mut self) -> Cbor {
        if let Some(n) = self.notes.pop_front() {
            return n;
        }
        loop {
            let msg = self.read().await;
            if !has(&msg, "id") {
                return msg;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cbor_client_gets_cbor_answers_and_errors_and_json_is_unchanged() {
    let node = TestNode::start();
    let target = node.target();
    let mut c = CborClient::connect(&target).await;

    // A result is a CBOR map.
    let info = c.ok("node.info", cbor(json!({}))).await;
    assert_eq!(text(get(&info, "node_id")), node.node_id());
    assert_eq!(int(get(&info, "protocol_version")), 1);

    // Error answers are CBOR too, with the request's id.
    let e = c.err("agent.explode", cbor(json!({}))).await;
    assert_eq!(e.code, -32601, "{}", e.message);
    let e = c.err("agent.get", cbor(json!({ "agent": 42 }))).await;
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("agent"), "{}", e.message);
    // A byte string where JSON has text: -32602 naming the field.
    let e = c
        .err(
            "agent.get",
            Cbor::Map(vec![("agent".into(), Cbor::Bytes(b"bob".to_vec()))]),
        )
        .await;
    assert_eq!(e.code, -32602);
    assert!(
        e.message.contains("invalid params: agent: a CBOR byte string"),
        "{}",
        e.message
    );

    // A garbled frame: -32700 as for bad JSON, and the connection stays usable.
    c.send(Message::Binary(vec![0xa1, 0x62, b'i'].into())).await;
    let e = c.response(None).await.expect_err("parse error");
    assert_eq!(e.code, -32700);
    assert!(e.message.starts_with("parse error: "), "{}", e.message);
    c.send(Message::Binary(vec![0xff, 0x00].into())).await;
    assert_eq!(c.response(None).await.expect_err("parse error").code, -32700);
    // A text frame: -32600 naming the subprotocol.
    c.send(Message::Text(
        json!({"jsonrpc": "2.0", "id": 99, "method": "node.info"})
            .to_string()
            .into(),
    ))
    .await;
    let e = c.response(None).await.expect_err("text frame");
    assert_eq!(e.code, -32600);
    assert!(e.message.contains("warren.v1.cbor"), "{}", e.message);
    // Over the frame limit (1 MiB by default): -32600 naming the limit.
    let pad = Cbor::Map(vec![("pad".into(), Cbor::Bytes(vec![b'x'; 1_100_000]))]);
    c.request("node.info", pad).await;
    let e = c.response(None).await.expect_err("too large");
    assert_eq!(e.code, -32600);
    assert!(e.message.contains("over the limit of 1048576 bytes"), "{}", e.message);
    // Nested too deep: -32600 naming the limit.
    let mut deep = Cbor::Null;
    for _ in 0..100 {
        deep = Cbor::Array(vec![deep]);
    }
    c.request("node.info", deep).await;
    let e = c.response(None).await.expect_err("too deep");
    assert_eq!(e.code, -32600);
    assert!(e.message.contains("deeper than 64 levels"), "{}", e.message);
    // Still usable after all of that.
    let info = c.ok("node.info", cbor(json!({}))).await;
    assert_eq!(text(get(&info, "node_id")), node.node_id());

    // Authorization is the JSON path's: no token, -32001 until session.authenticate.
    let anonymous = Target {
        url: target.url.clone(),
        token: None,
    };
    let mut anon = CborClient::connect(&anonymous).await;
    assert_eq!(anon.err("agent.list", cbor(json!({}))).await.code, -32001);
    let token = target.token.clone().expect("the admin token");
    anon.ok("session.authenticate", cbor(json!({ "token": token }))).await;
    let agents = anon.ok("agent.list", cbor(json!({}))).await;
    assert!(get(&agents, "agents").as_array().is_some(), "{agents:?}");

    // JSON clients on the same node: asking for nothing (the CLI's client),
    // for warren.v1.json, or offering both (the node prefers JSON).
    let mut j = node.client().await;
    assert_eq!(call(&mut j, "node.info", json!({})).await["node_id"], node.node_id());
    for offer in [JSON, "warren.v1.json, warren.v1.cbor", "warren.v1.cbor, warren.v1.json"] {
        let (mut ws, selected) = open(&target, Some(offer)).await;
        assert_eq!(selected.as_deref(), Some(JSON), "offering {offer}");
        ws.send(Message::Text(
            json!({"jsonrpc": "2.0", "id": 1, "method": "node.info"})
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
        let answer = loop {
            match ws.next().await.expect("open").expect("read") {
                Message::Text(t) => break serde_json::from_str::<serde_json::Value>(&t).expect("JSON"),
                Message::Binary(_) => panic!("a binary frame on the JSON subprotocol ({offer})"),
                _ => continue,
            }
        };
        assert_eq!(answer["result"]["node_id"], node.node_id(), "{offer}");
        // Binary frames on JSON are still refused, as before.
        ws.send(Message::Binary(vec![0xa0].into())).await.expect("send");
        let answer = loop {
            if let Message::Text(t) = ws.next().await.expect("open").expect("read") {
                break serde_json::from_str::<serde_json::Value>(&t).expect("JSON");
            }
        };
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    // No subprotocol asked: none selected.
    let (_ws, selected) = open(&target, None).await;
    assert_eq!(selected, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_output_reaches_a_cbor_client_as_bytes() {
    let node = TestNode::start();
    let mut c = CborClient::connect(&node.target()).await;
    let mut j: Client = node.client().await;

    let agent = c
        .ok("agent.create", cbor(json!({ "name": "cbor-agent", "harness": "fake" })))
        .await;
    assert_eq!(text(get(get(&agent, "agent"), "name")), "cbor-agent");
    let conv = c.ok("conversation.start", cbor(json!({ "agent": "cbor-agent" }))).await;
    let id = text(get(get(&conv, "conversation"), "id")).to_string();
    wait_idle(&mut j, &id).await;
    let screen = call(&mut j, "conversation.screen", json!({ "conversation": id })).await;
    let size = |key: &str| {
        let n = u16::try_from(screen[key].as_u64().expect("a size")).expect("fits u16");
        std::num::NonZeroU16::new(n).expect("not zero")
    };
    let (rows, cols) = (size("rows"), size("cols"));

    // Both clients watch the terminal.
    let sub = c.ok("terminal.subscribe", cbor(json!({ "conversation": id }))).await;
    let sub = text(get(&sub, "subscription")).to_string();
    call(&mut j, "terminal.subscribe", json!({ "conversation": id })).await;

    // Keystrokes as a byte string (UTF-8), Enter included.
    let keys = Cbor::Map(vec![
        ("conversation".into(), Cbor::Text(id.clone())),
        ("keys".into(), Cbor::Bytes(b"typed-in-cbor\r".to_vec())),
    ]);
    let sent = c.ok("conversation.sendKeys", keys).await;
    assert_eq!(get(&sent, "sent"), &Cbor::Bool(true));

    // The CBOR client's terminal.data carry the raw bytes as byte strings.
    let mut screen = vt100::Parser::new(rows, cols, 0);
    let mut chunks = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !screen.screen().contents().contains("echo: typed-in-cbor") {
        assert!(
            Instant::now() < deadline,
            "the echo never showed in the CBOR client's terminal: {}",
            screen.screen().contents()
        );
        let n = c.notification().await;
        assert_eq!(text(get(&n, "method")), "terminal.data", "{n:?}");
        let params = get(&n, "params");
        assert_eq!(text(get(params, "subscription")), sub);
        match get(params, "data") {
            Cbor::Bytes(b) => screen.process(b),
            other => panic!("terminal.data's data should be a byte string, got {other:?}"),
        }
        chunks += 1;
    }
    assert!(chunks > 0);

    // The JSON client on the same node still gets base64 text, and the same screen.
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut json_screen = vt100::Parser::new(rows, cols, 0);
    while !json_screen.screen().contents().contains("echo: typed-in-cbor") {
        let n = j
            .next_notification(Duration::from_secs(20))
            .await
            .expect("read")
            .expect("the JSON client's terminal.data");
        assert_eq!(n.method, "terminal.data");
        let data = n.params["data"].as_str().expect("base64 text in JSON");
        json_screen.process(&b64.decode(data).expect("base64"));
    }
    wait_event(&mut j, &id, "agent", "echo: typed-in-cbor").await;

    // The CBOR client keeps working after the stream.
    let got = c.ok("conversation.get", cbor(json!({ "conversation": id }))).await;
    assert_eq!(text(get(get(&got, "conversation"), "id")), id);
}
