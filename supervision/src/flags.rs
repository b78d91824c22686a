//! Which options of the allowlisted programs take a file: the ones whose
//! value the program writes (checked as writes: never a protected path, and
//! recorded) and the ones that name a configuration file it runs (a changed
//! one is a changed definition for the repository-code rule).

use crate::shell::Word;

/// Options of allowlisted programs whose value is a file (or directory) the
/// program writes: `(program, options)`. Long options match case-insensitively
/// (tsc accepts `--outdir`), short ones exactly; `--opt=value`, `--opt value`
/// and a glued short `-ovalue` are all read.
pub(crate) const OUTPUT_OPTIONS: &[(&str, &[&str])] = &[
    ("git", &["--output"]),
    (
        "go",
        &[
            "-o",
            "-coverprofile",
            "-cpuprofile",
            "-memprofile",
            "-blockprofile",
            "-mutexprofile",
            "-trace",
            "-outputdir",
        ],
    ),
    (
        "tsc",
        &[
            "--outdir",
            "--outfile",
            "--out",
            "--declarationdir",
            "--tsbuildinfofile",
        ],
    ),
    ("eslint", &["-o", "--output-file", "--cache-location"]),
    (
        "pytest",
        &["--basetemp", "--junitxml", "--junit-xml", "--result-log", "--resultlog"],
    ),
    ("vitest", &["--outputfile"]),
    (
        "curl",
        &[
            "-o",
            "--output",
            "-c",
            "--cookie-jar",
            "-D",
            "--dump-header",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--hsts",
            "--alt-svc",
            "--output-dir",
        ],
    ),
    (
        "wget",
        &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "-P",
            "--directory-prefix",
            "--save-cookies",
        ],
    ),
];

/// Options whose value is a configuration file that says what the program
/// runs: a definition for the repository-code rule when it was changed.
pub(crate) const CONFIG_OPTIONS: &[(&str, &[&str])] = &[
    ("make", &["-f", "--file", "--makefile"]),
    ("eslint", &["-c", "--config"]),
    ("vitest", &["-c", "--config"]),
    ("pytest", &["-c", "--config-file", "--confcutdir", "--rootdir"]),
    ("cargo", &["--manifest-path"]),
    ("go", &["-modfile", "-overlay"]),
    ("tsc", &["-p", "--project"]),
];

/// Options that move where a program looks for its definition files.
pub(crate) const DIRECTORY_OPTIONS: &[(&str, &[&str])] = &[("make", &["-C", "--directory"])];

/// The values `prog`'s options from `table` take in `args`.
pub(crate) fn option_values(table: &[(&str, &[&str])], prog: &str, args: &[Word]) -> Vec<Word> {
    let prog = match prog {
        "python" | "python3" => "pytest",
        other => other,
    };
    let Some((_, options)) = table.iter().find(|(p, _)| *p == prog) else {
        return Vec::new();
    };
    // Go reads `--name` as `-name`.
    let is_opt = |name: &str| {
        let name = match name.strip_prefix('-') {
            Some(rest) if prog == "go" && rest.starts_with('-') => rest,
            _ => name,
        };
        options.iter().any(|o| {
            if o.starts_with("--") || o.len() > 2 {
                o.eq_ignore_ascii_case(name)
            } else {
                *o == name
            }
        })
    };
    let plain = |text: &str| Word {
        text: text.to_string(),
        tilde: false,
    };
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.text.as_str();
        if let Some((name, value)) = text.split_once('=').filter(|(n, _)| n.starts_with('-')) {
            if is_opt(name) {
                out.push(plain(value));
            }
        } else if is_opt(text) {
            if let Some(value) = iter.next() {
                out.push(value.clone());
            }
        } else if matches!(prog, "curl" | "wget") && text.starts_with('-') && !text.starts_with("--") {
            // A cluster of short options (`-sSLo file`, `-so-file`): the first
            // output letter takes the rest of the cluster or the next word.
            for (i, c) in text.char_indices().skip(1) {
                if is_opt(&format!("-{c}")) {
                    let rest = &text[i + c.len_utf8()..];
                    if !rest.is_empty() {
                        out.push(plain(rest));
                    } else if let Some(value) = iter.next() {
                        out.push(value.clone());
                    }
                    break;
                }
            }
        } else if text.len() > 2 && !text.starts_with("--") && text.is_char_boundary(2) {
            let (short, value) = text.split_at(2);
            if is_opt(short) {
                out.push(plain(value));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(prog: &str, cmd: &str) -> Vec<String> {
        let words: Vec<Word> = cmd
            .split_whitespace()
            .map(|w| Word {
                text: w.to_string(),
                tilde: false,
            })
            .collect();
        option_values(OUTPUT_OPTIONS, prog, &words)
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn output_option_forms() {
        assert_eq!(values("git", "diff --output=a.diff"), ["a.diff"]);
        assert_eq!(values("git", "diff --output b.diff"), ["b.diff"]);
        assert_eq!(values("go", "build -o bin/x ./cmd"), ["bin/x"]);
        assert_eq!(values("go", "build --o=bin/y"), ["bin/y"]);
        assert_eq!(values("go", "test -coverprofile c.out"), ["c.out"]);
        assert_eq!(values("tsc", "--outDir dist"), ["dist"]);
        assert_eq!(values("tsc", "--OUTFILE=x.js"), ["x.js"]);
        assert_eq!(values("eslint", "-oreport.txt src"), ["report.txt"]);
        assert_eq!(values("curl", "-sSLo out.json https://x"), ["out.json"]);
        assert_eq!(values("curl", "-sSLoout.json https://x"), ["out.json"]);
        assert_eq!(values("python3", "-m pytest --junitxml=r.xml"), ["r.xml"]);
        assert!(values("cat", "-o x").is_empty());
        assert!(values("git", "commit -o x").is_empty());
    }
}
