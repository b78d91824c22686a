//! The console's files, embedded in the binary at build time (plain HTML,
//! CSS and JavaScript modules under `assets/`: no build step, no packages).

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!("assets/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// `GET /`.
pub const INDEX: &Asset = &asset!("index.html", "text/html; charset=utf-8");

/// `GET /assets/PATH`.
pub const ASSETS: &[Asset] = &[
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("rpc.js", JS),
    asset!("dom.js", JS),
    asset!("views.js", JS),
    asset!("conversation.js", JS),
    asset!("workspace.js", JS),
    asset!("terminal.js", JS),
    asset!("holds.js", JS),
    asset!("usage.js", JS),
    asset!("monitors.js", JS),
    asset!("tasks.js", JS),
    asset!("nodes.js", JS),
    asset!("chat.js", JS),
    asset!("push.js", JS),
    // The service worker (scope /assets/): Web Push notifications and their
    // Approve / Deny buttons.
    asset!("sw.js", JS),
    asset!("icon.svg", "image/svg+xml"),
];

/// The asset at `path` (relative to `/assets/`), if there is one.
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_embedded_modules_and_no_inline_script() {
        let html = std::str::from_utf8(INDEX.body).expect("utf-8");
        for (i, _) in html.match_indices("<script") {
            let tag = &html[i..i + html[i..].find('>').expect("tag end")];
            assert!(tag.contains("src=\"/assets/"), "inline or foreign script: {tag}");
        }
        assert!(!html.contains("style=\""), "inline style");
        assert!(!html.contains("onclick"), "inline handler");
        for a in ASSETS.iter().filter(|a| a.content_type == JS) {
            let text = std::str::from_utf8(a.body).expect("utf-8");
            for (i, _) in text.match_indices("from \"./") {
                let rest = &text[i + 8..];
                let name = &rest[..rest.find('"').expect("quote")];
                assert!(find(name).is_some(), "{} imports {name}, which is not embedded", a.path);
            }
            assert!(!text.contains("eval("), "{} uses eval", a.path);
            assert!(!text.contains("innerHTML"), "{} writes innerHTML", a.path);
        }
    }
}
