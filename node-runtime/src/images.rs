//! Guest images: the project's own scripts build them from Debian packages
//! (no registry). `deploy/images/build.sh HARNESS --warren-bin EXE` builds or
//! reuses the image whose content (Dockerfile, this `warren`, the CLI) it
//! hashes into its tag, so a node always runs guests of its own version.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};

/// Where the image definitions are: `WARREN_DEPLOY_DIR`, else a `deploy/`
/// beside or above the executable (a cargo build's target/{debug,release}),
/// else the source tree this binary was built from.
pub fn deploy_dir(self_exe: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = vec![];
    if let Some(d) = std::env::var_os("WARREN_DEPLOY_DIR") {
        candidates.push(PathBuf::from(d));
    }
    for up in self_exe.ancestors().skip(1).take(4) {
        candidates.push(up.join("deploy"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy"));
    candidates.into_iter().find(|d| d.join("images/build.sh").is_file())
}

/// The image name the build script tags for `harness` at `version`.
pub fn tag(harness: &str, version: &str) -> String {
    if version.contains(':') {
        version.to_string()
    } else {
        format!("warren/guest-{harness}:{version}")
    }
}

/// Builds (or reuses) the guest image of `harness` with `self_exe` inside;
/// each progress line goes to `progress`. Returns the image's tag.
pub async fn build(harness: &str, self_exe: &Path, progress: impl Fn(&str)) -> Result<String, String> {
    let dir = deploy_dir(self_exe).ok_or_else(|| {
        "the image definitions (deploy/images) were not found: set WARREN_DEPLOY_DIR to the repository's deploy directory"
            .to_string()
    })?;
    let script = dir.join("images/build.sh");
    let mut child = tokio::process::Command::new("bash")
        .arg(&script)
        .arg(harness)
        .arg("--warren-bin")
        .arg(self_exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    let stdout = child.stdout.take();
    let mut lines = child.stderr.take().map(|e| BufReader::new(e).lines());
    let mut last_err = String::new();
    if let Some(lines) = lines.as_mut() {
        while let Ok(Some(line)) = lines.next_line().await {
            progress(&line);
            last_err = line;
        }
    }
    let mut version = String::new();
    if let Some(out) = stdout {
        let mut out = BufReader::new(out).lines();
        while let Ok(Some(line)) = out.next_line().await {
            if !line.trim().is_empty() {
                version = line.trim().to_string();
            }
        }
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    if !status.success() || version.is_empty() {
        return Err(format!(
            "building the {harness} guest image failed ({status}): {last_err}"
        ));
    }
    Ok(tag(harness, &version))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tags() {
        assert_eq!(super::tag("fake", "abc123"), "warren/guest-fake:abc123");
        assert_eq!(super::tag("fake", "x/y:z"), "x/y:z");
    }

    #[test]
    fn the_source_tree_is_found() {
        let dir = super::deploy_dir(std::path::Path::new("/nonexistent/bin/warren")).expect("deploy dir");
        assert!(dir.join("images/build.sh").is_file());
    }
}
