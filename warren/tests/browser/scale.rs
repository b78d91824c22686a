//! The fleet view at fleet scale, measured in the page (a figure, not a
//! pass/fail on time): the console's own `fleetView` (the real module the
//! node serves) renders N nodes x 25 agents from answers shaped as the API
//! gives them (fleet.nodes, agent.list / conversation.list /
//! supervision.holds {fleet: true}), handed to it by a stand-in connection
//! in the page: 20 real members cannot run beside a browser on this
//! machine, and the render is what the figure is about (the calls' own cost
//! is `cargo bench -p tests-netlab --bench fanout`). Timed with
//! `performance.now()` from the view's call to its rows laid out, 15 runs
//! per size, at 1, 5, 20 and 40 nodes; the 20-node view is screenshotted
//! and filtered to one node's agents.

use super::*;

const MEASURE: &str = r#"
const done = arguments[arguments.length - 1];
(async () => {
  const { fleetView } = await import('/assets/views.js');
  const world = (n) => {
    const nodes = [...Array(n).keys()].map((i) => ({
      name: `n${i + 1}`, node_id: `id-${i + 1}`, healthy: i % 7 !== 6, self: i === 0,
      endpoint: `ws://10.77.0.${i + 11}:7777/v1/ws`, version: '0.1.0', agents: 25,
      live_conversations: 5, last_seen: Date.now() - 800, capacity: { cpus: 2, memory_mb: 4096, guests: 5 },
    }));
    const agents = nodes.flatMap((nd) => [...Array(25).keys()].map((j) => ({ name: `agent-${j}`, harness: j % 3 ? 'claude' : 'codex', node: nd.name, archived: false })));
    const conversations = agents.filter((_, k) => k % 3 === 0).map((a, k) => ({
      id: `c-${k}`, agent: a.name, node: a.node, state: 'active', status: k % 4 ? 'IDLE' : 'BUSY',
    }));
    const holds = agents.filter((_, k) => k % 25 === 3).map((a, k) => ({ id: `h-${k}`, agent: a.name, node: a.node, summary: 'git push --force' }));
    return {
      'fleet.nodes': { nodes },
      'agent.list': { agents, unreachable: [] },
      'conversation.list': { conversations, unreachable: [] },
      'supervision.holds': { holds, unreachable: [] },
      'monitor.list': { attachments: [], unreachable: [] },
      'mailbox.unread': { agents: [], unreachable: [] },
      'spend.history': { days: [] },
    };
  };
  const ctxFor = (answers) => ({
    readOnly: false, live: true,
    rpc: { call: async (method) => structuredClone(answers[method] ?? null) },
    onUp: () => () => {}, onEvents: () => () => {},
  });
  const once = async (answers, rows, keep) => {
    const main = document.createElement('main');
    main.id = 'scale';
    document.body.append(main);
    const t0 = performance.now();
    const stop = fleetView(main, ctxFor(answers));
    await new Promise((resolve) => {
      const seen = () => main.querySelectorAll('#agents li').length === rows;
      if (seen()) return resolve();
      new MutationObserver((_, o) => { if (seen()) { o.disconnect(); resolve(); } }).observe(main, { childList: true, subtree: true });
    });
    main.getBoundingClientRect();
    const ms = performance.now() - t0;
    stop();
    if (!keep) main.remove();
    return ms;
  };
  const out = {};
  for (const n of [1, 5, 20, 40]) {
    const answers = world(n);
    const times = [];
    for (let r = 0; r < 15; r++) times.push(await once(answers, n * 25, false));
    times.sort((a, b) => a - b);
    out[n] = { p50: times[7], max: times[14], runs: times.length, rows: n * 25 };
  }
  document.getElementById('view').style.display = 'none';
  await once(world(20), 500, true);
  done(out);
})().catch((e) => done({ error: String(e) }));
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_view_of_20_nodes_and_500_agents_measured_in_the_page() {
    let (_one, driver) = start_driver().await;
    let node = TestNode::start();
    let (c, _profile) = paired_console(&driver, &node).await;
    let figures = c.execute_async(MEASURE, vec![]).await.expect("measure");
    assert!(figures.get("error").is_none(), "{figures}");
    for n in ["1", "5", "20", "40"] {
        let f = &figures[n];
        assert_eq!(f["rows"].as_u64(), Some(n.parse::<u64>().expect("n") * 25), "{figures}");
        eprintln!(
            "figure: fleet view render, {n} nodes x 25 agents: p50 {:.1} ms, max {:.1} ms over {} runs",
            f["p50"].as_f64().unwrap_or(f64::NAN),
            f["max"].as_f64().unwrap_or(f64::NAN),
            f["runs"]
        );
    }
    // The 20-node view, as drawn: every agent as NAME@NODE but the own node's.
    let drawn = c
        .execute(
            "const li = [...document.querySelectorAll('#scale #agents li')];
             return [li.length, li.filter((l) => l.dataset.agent.includes('@')).length, document.querySelectorAll('#scale #nodes li').length]",
            vec![],
        )
        .await
        .expect("drawn");
    assert_eq!(drawn, json!([500, 475, 20]), "{drawn}");
    shot(
        &c,
        "fleet-20x25",
        "desktop: the fleet view of 20 nodes x 25 agents (rendered from API-shaped answers)",
    )
    .await;
    // One node's agents only.
    let shown = c
        .execute(
            "const s = document.querySelector('#scale #agents-node'); s.value = 'n3'; s.dispatchEvent(new Event('change'));
             const li = [...document.querySelectorAll('#scale #agents li')].filter((l) => !l.hidden);
             return [li.length, li.every((l) => l.dataset.node === 'n3')]",
            vec![],
        )
        .await
        .expect("filter");
    assert_eq!(shown, json!([25, true]), "{shown}");
    std::fs::write(
        shots_dir().join("fleet-render.json"),
        serde_json::to_string_pretty(&figures).expect("json") + "\n",
    )
    .expect("write fleet-render.json");
}
