//! Where things are in an agent's home and in a guest image, shared by the
//! runtime (what it mounts) and the node (what it writes there).

use std::path::{Path, PathBuf};

/// Where the guest images keep the `warren` binary: off the guest's PATH, so
/// `command -v warren` finds nothing there; tools and hooks use this path.
pub const GUEST_WARREN: &str = "/usr/local/lib/warren/warren";

/// The tools dir of a conversation's home.
pub fn tools_dir(home: &Path) -> PathBuf {
    home.join(".warren").join("tools")
}
