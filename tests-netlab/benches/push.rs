//! A hold on one member -> the push POSTed by the member the phone
//! subscribed on (`cargo bench -p tests-netlab --bench push [-- SIZES...]`,
//! as root; default 3 and 10 members): real `warren up` processes on one
//! netlab bridge, a fake push service on the host's bridge address, the
//! phone's subscription on n1, and HOLDS dialogs held one after another on
//! the last member. Reports, per size, the time from the hold (its `since`
//! on the member's clock, the same host's) to the POST's arrival, and from
//! the message that caused it, p50/p99/max. It asserts nothing about the
//! numbers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fake_model::push::FakePush;
use serde_json::json;
use tests_netlab::wait_for;

mod common;
use common::{fleet_of, pct, sorted};

const HOLDS: usize = 40;

/// A fixed subscriber key (the bench does not decrypt): a P-256 point.
const P256DH: &str = "BDe552ZytN4VbQkFiY_NgFBKjcJIV00YNA_jgLzb-pFboAl-2ZMOPC2K0HfVWDYynfqEPc7UZvQnEQpsWRYL9Y0";
const AUTH: &str = "0PpDmq1vn5Hzg1LLuTEP3Q";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![3, 10] } else { sizes };
    println!("push bench: {HOLDS} holds on the last member, pushed by n1 to a fake push service over the netlab");
    for size in sizes {
        let lab = fleet_of(size, "[push]\nallow_private = true\n").await;
        let mut service = FakePush::start(format!("{}:0", lab.host_ip()).parse().expect("addr"))
            .await
            .expect("fake push service");
        let token = lab.owner_token(0, &["node:observe", "node:supervise"]).expect("token");
        let mut phone = lab.nodes[0].ws(&token).await.expect("phone on n1");
        let sub = json!({ "endpoint": service.url("/phone"), "keys": { "p256dh": P256DH, "auth": AUTH } });
        phone.call("push.subscribe", sub).await.expect("push.subscribe");
        let home = &lab.nodes[size - 1];
        home.call("agent.create", json!({ "name": "asker", "harness": "fake" }))
            .await
            .expect("agent");
        let conv = home.idle_conversation("asker").await.expect("idle");
        let (mut from_hold, mut from_send) = (vec![], vec![]);
        for i in 0..HOLDS {
            let sent = now_ms();
            home.call(
                "conversation.sendMessage",
                json!({ "conversation": conv, "text": format!("/fake tool bash git push --force origin b{i}") }),
            )
            .await
            .expect("send");
            let pushed = service
                .next_to("/phone", Duration::from_secs(20))
                .await
                .unwrap_or_else(|| panic!("no push within 20 s\n{}", lab.nodes[0].log()));
            let arrived = now_ms() - pushed.at.elapsed().as_secs_f64() * 1000.0;
            let hold = wait_for("the hold listed", Duration::from_secs(10), || async {
                let v = home.call("supervision.holds", json!({})).await.ok()?;
                v["holds"].as_array()?.first().cloned()
            })
            .await
            .expect("hold");
            let since = hold["since"].as_f64().expect("since");
            from_hold.push(arrived - since);
            from_send.push(arrived - sent);
            home.call("supervision.answer", json!({ "hold": hold["id"], "decision": "deny" }))
                .await
                .expect("deny");
            wait_for("idle again", Duration::from_secs(20), || async {
                let v = home
                    .call("conversation.get", json!({ "conversation": conv }))
                    .await
                    .ok()?;
                let held = home.call("supervision.holds", json!({})).await.ok()?;
                (v["conversation"]["status"] == "IDLE" && held["holds"] == json!([])).then_some(())
            })
            .await
            .expect("idle");
        }
        let (h, s) = (sorted(from_hold), sorted(from_send));
        println!(
            "push {size:>2} members: hold -> POST p50 {:.1} ms p99 {:.1} ms max {:.1} ms; message -> POST p50 {:.1} ms p99 {:.1} ms ({HOLDS} holds)",
            pct(&h, 0.5),
            pct(&h, 0.99),
            pct(&h, 1.0),
            pct(&s, 0.5),
            pct(&s, 0.99),
        );
        drop(lab);
    }
}
