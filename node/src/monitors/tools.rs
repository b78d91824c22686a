//! A monitor conversation's tools: `warren-read` (every attachment) and
//! `warren-advise` (an advising one) in `<home>/.warren/tools`, links to the
//! one `warren` binary (this node's, or the guest image's), first on the
//! CLI's PATH. A tool the attachments do not grant is not there.

use std::path::{Path, PathBuf};

use crate::service::Node;

/// Where the guest images keep the `warren` binary.
const GUEST_WARREN: &str = "/usr/local/bin/warren";

impl Node {
    /// Makes the tools dir of a launch of `agent`'s CLI, and names its
    /// tools; `None` when the agent is no monitor (then nothing is made, and
    /// a stale dir goes).
    pub(crate) async fn prepare_monitor_tools(
        &self,
        agent: &str,
        home: &Path,
    ) -> std::io::Result<Option<(PathBuf, Vec<String>)>> {
        // Watching: any attachment; advising: any with inject.
        let advising: Vec<bool> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .of_monitor(agent)
                .map(|(_, a)| a.spec.inject.unwrap_or(true))
                .collect()
        };
        let (watching, advising) = (!advising.is_empty(), advising.contains(&true));
        let dir = home.join(".warren").join("tools");
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        if !watching {
            return Ok(None);
        }
        std::fs::create_dir_all(&dir)?;
        let exe = if self.runtime_name() == "docker" {
            PathBuf::from(GUEST_WARREN)
        } else {
            self.cfg.self_exe.clone()
        };
        let mut tools = vec!["warren-read"];
        if advising {
            tools.push("warren-advise");
        }
        for t in &tools {
            std::os::unix::fs::symlink(&exe, dir.join(t))?;
        }
        Ok(Some((dir, tools.iter().map(|t| t.to_string()).collect())))
    }
}
