//! NetLab: real `warren up` processes, each in its own network namespace
//! with its own address on one bridge, so the fabric between them crosses
//! real (virtual) links that a test can cut with nft and heal. Unique names
//! per lab, teardown in a guard (`Drop`), and a reaper for the leftovers of
//! runs that died. Needs root, `ip` and `nft`: without them a lab fails
//! loudly, it never skips.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// Every namespace and link of a lab starts with this.
const PREFIX: &str = "wl";
/// The API port each node listens on (inside its own namespace).
pub const API_PORT: u16 = 7767;
/// The fabric port each node listens on.
pub const FABRIC_PORT: u16 = 7768;

static LABS: AtomicU32 = AtomicU32::new(0);
/// The 10.77.S.0/24 subnets the labs of this process hold (tests run in
/// parallel: two labs must never share one).
static SUBNETS: std::sync::Mutex<std::collections::BTreeSet<u8>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A subnet no lab of this process holds and no interface of this host
/// carries (another process's lab, or one left over), taken under the lock.
fn take_subnet() -> anyhow::Result<u8> {
    let mut held = SUBNETS
        .lock()
        .map_err(|_| anyhow::anyhow!("the lab subnets' lock is poisoned"))?;
    let on_host = sh(&["ip", "-o", "-4", "addr", "show"])?;
    let start = usize::from(rand::random::<u8>());
    for k in 0..150usize {
        let s = 100 + ((start + k) % 150) as u8;
        if !held.contains(&s) && !on_host.contains(&format!(" 10.77.{s}.")) {
            held.insert(s);
            return Ok(s);
        }
    }
    bail!("every lab subnet 10.77.100-249.0/24 is in use")
}

/// Runs a command, failing with its output when it fails.
pub fn sh(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("running {args:?} (is iproute2/nftables installed?)"))?;
    if !out.status.success() {
        bail!(
            "{args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// Runs a command inside namespace `ns`.
pub fn in_ns(ns: &str, args: &[&str]) -> anyhow::Result<String> {
    let mut full = vec!["ip", "netns", "exec", ns];
    full.extend_from_slice(args);
    sh(&full)
}

/// The `warren` binary this test build made (target/<profile>/warren).
pub fn warren_exe() -> PathBuf {
    let me = std::env::current_exe().expect("current exe");
    let dir = me.parent().and_then(Path::parent).expect("target dir");
    let exe = dir.join("warren");
    assert!(
        exe.is_file(),
        "{} is missing: build it first (`cargo build -p warren`; `cargo test --workspace` does)",
        exe.display()
    );
    exe
}

/// Removes namespaces and links of labs whose test process is gone.
/// The kernel keeps one ARP table for every namespace, at most
/// `gc_thresh3` entries (1,024 by default): a full mesh of 32 namespaces
/// fills it (each knows every other), and past that new connections fail
/// for want of an ARP entry ("neighbor table overflow" in the kernel log).
/// A lab too large for the limit raises it (never lowers it); a small one
/// leaves the host's settings alone.
fn room_for_neighbours(nodes: usize) -> anyhow::Result<()> {
    let dir = Path::new("/proc/sys/net/ipv4/neigh/default");
    let read = |name: &str| -> anyhow::Result<usize> { Ok(std::fs::read_to_string(dir.join(name))?.trim().parse()?) };
    // Each namespace knows every other, and the host a few more.
    let want = nodes * nodes + 256;
    if read("gc_thresh3")? >= want {
        return Ok(());
    }
    // The hard limit, then the soft one (past which entries are collected
    // sooner) at half of it.
    for (name, value) in [("gc_thresh3", want), ("gc_thresh2", want / 2)] {
        if read(name)? < value {
            std::fs::write(dir.join(name), value.to_string())
                .map_err(|e| anyhow::anyhow!("a lab of {nodes} needs {name} >= {value}: {e}"))?;
        }
    }
    Ok(())
}

pub fn reap_leftovers() {
    let Ok(list) = sh(&["ip", "netns", "list"]) else { return };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(pid) = lab_pid(name)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = sh(&["ip", "netns", "del", name]);
        }
    }
    if let Ok(rules) = sh(&["iptables", "-S", "FORWARD"]) {
        for rule in rules.lines() {
            let words: Vec<&str> = rule.split_whitespace().collect();
            let bridge = words.windows(2).find(|w| w[0] == "-i").map(|w| w[1]).unwrap_or("");
            if let Some(pid) = lab_pid(bridge)
                && !Path::new(&format!("/proc/{pid}")).exists()
                && words.first() == Some(&"-A")
            {
                let mut del = vec!["iptables", "-D"];
                del.extend(&words[1..]);
                let _ = sh(&del);
            }
        }
    }
    let Ok(links) = sh(&["ip", "-o", "link", "show"]) else {
        return;
    };
    for line in links.lines() {
        let name = line
            .split(':')
            .nth(1)
            .map(|n| n.trim().split('@').next().unwrap_or(""))
            .unwrap_or("");
        if let Some(pid) = lab_pid(name)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = sh(&["ip", "link", "del", name]);
        }
    }
}

/// The pid a lab name was made by: `wl<pid hex, 5>` then the rest.
fn lab_pid(name: &str) -> Option<u32> {
    let hex = name.strip_prefix(PREFIX)?.get(..5)?;
    u32::from_str_radix(hex, 16).ok()
}

/// One node: its namespace, address, data dir and process.
pub struct LabNode {
    pub name: String,
    pub ns: String,
    pub ip: String,
    pub dir: PathBuf,
    child: Option<Child>,
}

impl LabNode {
    /// Calls the node's API over its Unix socket (local admin), which works
    /// across namespaces (the socket is a file).
    pub async fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        warren::client::unix_call(&self.dir, method, params)
            .await
            .map_err(|e| anyhow::anyhow!("{} {method}: {e}", self.name))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("node.log")).unwrap_or_default()
    }

    /// The node's fabric address as other members dial it.
    pub fn fabric_addr(&self) -> String {
        format!("/ip4/{}/tcp/{FABRIC_PORT}", self.ip)
    }

    fn start(&mut self, exe: &Path, join: Option<&str>) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("node.log"))?;
        let _ = std::fs::remove_file(self.dir.join("warren.sock"));
        let listen = format!("{}:{API_PORT}", self.ip);
        let data_dir = self.dir.display().to_string();
        let exe = exe.display().to_string();
        let mut args = vec![
            "netns",
            "exec",
            &self.ns,
            &exe,
            "up",
            "--runtime",
            "local",
            "--listen",
            &listen,
            "--data-dir",
            &data_dir,
        ];
        if let Some(code) = join {
            args.extend(["--join", code]);
        }
        let child = Command::new("ip")
            .args(&args)
            .env("RUST_LOG", "warn,node::fleet=info,fabric=debug,node::mail=info")
            .stdout(log.try_clone()?)
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .context("starting a node in its namespace")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.dir.join("warren.sock").exists() {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                bail!("{} exited ({status}) before it listened:\n{}", self.name, self.log());
            }
            if Instant::now() > deadline {
                bail!("{} did not start within 30 s:\n{}", self.name, self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The node's process id (`ip netns exec` execs the node in place).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The node's resident memory (VmRSS), in KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    }

    /// `kill -9` of the node process (its namespace stays).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Drops all traffic in and out of the node's namespace (nft).
    pub fn partition(&self) -> anyhow::Result<()> {
        let rules = "table inet warrenlab {\n chain in { type filter hook input priority 0; policy drop; iif lo accept; }\n chain out { type filter hook output priority 0; policy drop; oif lo accept; }\n}\n";
        let file = self.dir.join("partition.nft");
        std::fs::write(&file, rules)?;
        in_ns(&self.ns, &["nft", "-f", &file.display().to_string()]).map(|_| ())
    }

    pub fn heal(&self) -> anyhow::Result<()> {
        in_ns(&self.ns, &["nft", "delete", "table", "inet", "warrenlab"]).map(|_| ())
    }
}

impl Drop for LabNode {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A lab: a bridge, namespaces on it, and nodes in them.
pub struct Lab {
    id: String,
    bridge: String,
    subnet: u8,
    exe: PathBuf,
    pub nodes: Vec<LabNode>,
    _dirs: tempfile::TempDir,
}

impl Lab {
    /// A bridge with `names.len()` namespaces on it, one address each
    /// (10.77.S.11, .12, ...); no node started yet.
    pub fn new(names: &[&str]) -> anyhow::Result<Lab> {
        let who = sh(&["id", "-u"])?;
        if who.trim() != "0" {
            bail!("the netlab needs root (network namespaces, veth, nft); run as root");
        }
        reap_leftovers();
        room_for_neighbours(names.len())?;
        let n = LABS.fetch_add(1, Ordering::SeqCst);
        let id = format!("{PREFIX}{:05x}{n:x}", std::process::id() & 0xfffff);
        let subnet = take_subnet()?;
        let bridge = format!("{id}br");
        sh(&["ip", "link", "add", &bridge, "type", "bridge"])?;
        sh(&["ip", "addr", "add", &format!("10.77.{subnet}.1/24"), "dev", &bridge])?;
        sh(&["ip", "link", "set", &bridge, "up"])?;
        // Docker's FORWARD policy (DROP, with bridged traffic through
        // iptables) would stop traffic between the namespaces.
        sh(&[
            "iptables", "-I", "FORWARD", "-i", &bridge, "-o", &bridge, "-j", "ACCEPT",
        ])?;
        let dirs = tempfile::tempdir()?;
        let mut lab = Lab {
            id,
            bridge,
            subnet,
            exe: warren_exe(),
            nodes: vec![],
            _dirs: dirs,
        };
        for (i, name) in names.iter().enumerate() {
            lab.add_namespace(name, i)?;
        }
        Ok(lab)
    }

    fn add_namespace(&mut self, name: &str, i: usize) -> anyhow::Result<()> {
        let ns = format!("{}-{name}", self.id);
        let host = format!("{}h{i}", self.id);
        let inner = format!("{}n{i}", self.id);
        let ip = format!("10.77.{}.{}", self.subnet, 11 + i);
        sh(&["ip", "netns", "add", &ns])?;
        sh(&["ip", "link", "add", &host, "type", "veth", "peer", "name", &inner])?;
        sh(&["ip", "link", "set", &inner, "netns", &ns])?;
        sh(&["ip", "link", "set", &host, "master", &self.bridge, "up"])?;
        in_ns(&ns, &["ip", "addr", "add", &format!("{ip}/24"), "dev", &inner])?;
        in_ns(&ns, &["ip", "link", "set", &inner, "up"])?;
        in_ns(&ns, &["ip", "link", "set", "lo", "up"])?;
        let dir = self._dirs.path().join(name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("warren.toml"),
            format!(
                "name = {name:?}\n[fleet]\nlisten = \"/ip4/{ip}/tcp/{FABRIC_PORT}\"\nheartbeat_ms = 500\nunhealthy_after_ms = 2500\nprove_within_ms = 2000\n[pricing]\nurl = \"\"\n"
            ),
        )?;
        self.nodes.push(LabNode {
            name: name.to_string(),
            ns,
            ip,
            dir,
            child: None,
        });
        Ok(())
    }

    /// Makes node `i` the fleet's owner (its data dir holds the owner key).
    pub fn make_owner(&self, i: usize) -> anyhow::Result<()> {
        let key = self.nodes[i].dir.join("owner.key");
        sh(&[
            &self.exe.display().to_string(),
            "fleet",
            "init",
            "--key-file",
            &key.display().to_string(),
        ])
        .map(|_| ())
    }

    /// Starts node `i` (joining with `join` when given).
    pub fn start(&mut self, i: usize, join: Option<&str>) -> anyhow::Result<()> {
        let exe = self.exe.clone();
        self.nodes[i].start(&exe, join)
    }

    pub fn node(&self, name: &str) -> &LabNode {
        self.nodes.iter().find(|n| n.name == name).expect("a node of this lab")
    }

    pub fn node_mut(&mut self, name: &str) -> &mut LabNode {
        self.nodes
            .iter_mut()
            .find(|n| n.name == name)
            .expect("a node of this lab")
    }

    pub fn index(&self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .expect("a node of this lab")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.kill9();
            let _ = sh(&["ip", "netns", "del", &n.ns]);
        }
        let _ = sh(&["ip", "link", "del", &self.bridge]);
        if let Ok(mut held) = SUBNETS.lock() {
            held.remove(&self.subnet);
        }
        let _ = sh(&[
            "iptables",
            "-D",
            "FORWARD",
            "-i",
            &self.bridge,
            "-o",
            &self.bridge,
            "-j",
            "ACCEPT",
        ]);
    }
}

/// Polls `check` until it gives a value, or fails naming `what` at the deadline.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl LabNode {
    /// A single-use join code printed by this node (it holds the owner key).
    pub async fn invite(&self) -> anyhow::Result<String> {
        let v = self.call("fleet.invite", json!({ "ttl_secs": 600 })).await?;
        v["invite"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow::anyhow!("{}: fleet.invite gave no code: {v}", self.name))
    }

    /// Starts `agent`'s conversation here and waits (20 s) until it is idle;
    /// its id. A timeout's error carries the node's log.
    pub async fn idle_conversation(&self, agent: &str) -> anyhow::Result<String> {
        let v = self.call("conversation.start", json!({ "agent": agent })).await?;
        let conv = v["conversation"]["id"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("{}: conversation.start gave no id: {v}", self.name))?
            .to_string();
        wait_for("the conversation idle", Duration::from_secs(20), || async {
            let v = self
                .call("conversation.get", json!({ "conversation": conv }))
                .await
                .ok()?;
            (v["conversation"]["status"] == "IDLE").then_some(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}\n{}", self.log()))?;
        Ok(conv)
    }

    /// A WebSocket client of the node (from the host, over the bridge),
    /// carrying `token`.
    pub async fn ws(&self, token: &str) -> anyhow::Result<warren::client::Client> {
        let target = warren::client::Target {
            url: format!("ws://{}:{API_PORT}/v1/ws", self.ip),
            token: Some(token.to_string()),
        };
        warren::client::Client::connect(&target).await
    }
}

impl Lab {
    /// The host's address on the lab's bridge: a service the test runs
    /// there (a fake push service, say) is reachable from every namespace.
    pub fn host_ip(&self) -> String {
        format!("10.77.{}.1", self.subnet)
    }

    /// Sets node `i`'s `[fleet] listen` (multiaddrs, comma separated); `{ip}`
    /// stands for the node's address.
    pub fn set_listen(&self, i: usize, listen: &str) -> anyhow::Result<()> {
        let listen = listen.replace("{ip}", &self.nodes[i].ip);
        self.set_fleet(i, "listen", Some(&format!("{listen:?}")))
    }

    /// Sets node `i`'s `[fleet] KEY = VALUE` (VALUE as TOML writes it), in
    /// place of the lab's own line for that key; `None` removes the line, so
    /// the node's default holds.
    pub fn set_fleet(&self, i: usize, key: &str, value: Option<&str>) -> anyhow::Result<()> {
        let path = self.nodes[i].dir.join("warren.toml");
        let was = std::fs::read_to_string(&path)?;
        let prefix = format!("{key} = ");
        anyhow::ensure!(
            was.lines().any(|l| l.starts_with(&prefix)),
            "the lab's warren.toml has no [fleet] {key} line to set"
        );
        let now: Vec<String> = was
            .lines()
            .filter_map(|l| match (l.starts_with(&prefix), value) {
                (false, _) => Some(l.to_string()),
                (true, Some(v)) => Some(format!("{key} = {v}")),
                (true, None) => None,
            })
            .collect();
        std::fs::write(&path, now.join("\n") + "\n")?;
        Ok(())
    }

    /// Appends `toml` to node `i`'s warren.toml (before it starts).
    pub fn configure(&self, i: usize, toml: &str) -> anyhow::Result<()> {
        use std::io::Write;
        let path = self.nodes[i].dir.join("warren.toml");
        let mut f = std::fs::OpenOptions::new().append(true).open(&path)?;
        f.write_all(toml.as_bytes())?;
        Ok(())
    }

    /// A token signed offline by the fleet owner key (held by node `owner`),
    /// with `--right` arguments such as `node:admin` or `agent:NAME:observe`.
    pub fn owner_token(&self, owner: usize, rights: &[&str]) -> anyhow::Result<String> {
        let key = self.nodes[owner].dir.join("owner.key").display().to_string();
        let exe = self.exe.display().to_string();
        let mut args = vec![
            exe.as_str(),
            "token",
            "mint",
            "--key-file",
            key.as_str(),
            "--ttl",
            "3600",
        ];
        for r in rights {
            args.extend(["--right", r]);
        }
        let out = sh(&args)?;
        Ok(out.lines().next().unwrap_or_default().trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Labs made at once hold distinct subnets, and a dropped lab's subnet
    /// is free again.
    #[test]
    fn labs_made_at_once_never_share_a_subnet() {
        let labs: Vec<Lab> = std::thread::scope(|s| {
            let made: Vec<_> = (0..6)
                .map(|_| s.spawn(|| Lab::new(&["a"]).expect("a lab (needs root)")))
                .collect();
            made.into_iter().map(|h| h.join().expect("a lab thread")).collect()
        });
        let subnets: std::collections::BTreeSet<u8> = labs.iter().map(|l| l.subnet).collect();
        assert_eq!(subnets.len(), labs.len(), "{subnets:?}");
        let one = labs[0].subnet;
        assert!(SUBNETS.lock().expect("lock").contains(&one));
        drop(labs);
        assert!(!SUBNETS.lock().expect("lock").contains(&one));
    }
}
