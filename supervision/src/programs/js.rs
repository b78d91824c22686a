//! JavaScript tooling. The package managers (`npm`, `pnpm`, `yarn`, `bun`)
//! run a package.json script by name, with exactly spelled options (npm reads
//! any `--key=value` as configuration, abbreviations included: `--script-sh`
//! is `script-shell`, `--node-opt` is `node-options`, so nothing outside the
//! table is guessed at); a script named `env` prints the environment, which is
//! credential access. `tsc`, `eslint` and `vitest` take options that name
//! code to load (`--plugin`, `--rulesdir`, `--parser`, a formatter or
//! reporter path), none of which are allowlisted.

use std::path::Path;

use super::{positionals, writer};
use crate::argv::{Arg, Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Config, Data, Flag, Write};

/// Options a package manager takes with a script run.
const PM: &[Opt] = &[
    opt(&["-s", "--silent"], Flag),
    opt(&["--if-present"], Flag),
    opt(&["--workspaces"], Flag),
    opt(&["-w", "--workspace"], Data),
    opt(&["-r", "--recursive"], Flag),
    opt(&["--filter"], Data),
    opt(&["-v", "--version"], Flag),
];

/// What a package manager's first word may be.
const PM_SUBCOMMANDS: &[&str] = &[
    "test",
    "t",
    "tst",
    "run",
    "run-script",
    "ls",
    "list",
    "lint",
    "build",
    "typecheck",
];

const TSC: &[Opt] = &[
    opt(&["--noEmit"], Flag),
    opt(&["--outDir"], Write),
    opt(&["--outFile", "--out"], Write),
    opt(&["--declarationDir"], Write),
    opt(&["--tsBuildInfoFile"], Write),
    opt(&["-p", "--project"], Config),
    opt(&["--pretty"], Flag),
    opt(&["--strict"], Flag),
    opt(&["--incremental"], Flag),
    opt(&["--listFiles"], Flag),
    opt(&["--listEmittedFiles"], Flag),
    opt(&["--skipLibCheck"], Flag),
    opt(&["--target", "-t"], Data),
    opt(&["--module", "-m"], Data),
    opt(&["--declaration", "-d"], Flag),
    opt(&["--sourceMap"], Flag),
    opt(&["--noErrorTruncation"], Flag),
    opt(&["--extendedDiagnostics"], Flag),
    opt(&["--version", "-v"], Flag),
];

const ESLINT: &[Opt] = &[
    opt(&["--ext"], Data),
    opt(&["--fix"], Flag),
    opt(&["--fix-dry-run"], Flag),
    opt(&["-c", "--config"], Config),
    opt(&["--max-warnings"], Data),
    opt(&["--quiet"], Flag),
    opt(&["--cache"], Flag),
    opt(&["--cache-location"], Write),
    opt(&["-o", "--output-file"], Write),
    opt(&["--color"], Flag),
    opt(&["--no-color"], Flag),
    opt(&["--no-ignore"], Flag),
    opt(&["--ignore-pattern"], Data),
    opt(&["--report-unused-disable-directives"], Flag),
    opt(&["--no-error-on-unmatched-pattern"], Flag),
    opt(&["--version", "-v"], Flag),
];

const VITEST: &[Opt] = &[
    opt(&["--run"], Flag),
    opt(&["--reporter"], Data),
    opt(&["--outputFile"], Write),
    opt(&["-c", "--config"], Config),
    opt(&["-t", "--testNamePattern"], Data),
    opt(&["--passWithNoTests"], Flag),
    opt(&["--silent"], Flag),
    opt(&["-u", "--update"], Flag),
    opt(&["--bail"], Data),
    opt(&["--no-color"], Flag),
    opt(&["--allowOnly"], Flag),
    opt(&["--version", "-v"], Flag),
];

/// Reporters vitest ships (`--reporter` also takes a module path: code).
const VITEST_REPORTERS: &[&str] = &[
    "default",
    "basic",
    "verbose",
    "dot",
    "json",
    "junit",
    "tap",
    "tap-flat",
    "hanging-process",
    "github-actions",
    "tree",
];

pub(super) fn judge(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    match prog {
        "tsc" => {
            let effects = writer(prog, &Spec::whole(TSC).loose(), args, ctx, cwd)?;
            // Its project includes everything under where it runs.
            ctx.walk_stays_inside(prog, std::slice::from_ref(&effects.run_dir))?;
            ctx.ran(prog, &[], &effects.run_dir, effects.named);
            Ok(())
        }
        "eslint" => {
            let spec = Spec::gnu(ESLINT);
            let effects = writer(prog, &spec, args, ctx, cwd)?;
            // It walks each directory it is given, or where it runs.
            let parsed = parse(prog, &spec, args)?;
            let mut roots: Vec<std::path::PathBuf> = positionals(&parsed)
                .filter_map(|w| crate::paths::resolve_path(&effects.run_dir.join(&*w.text), ctx.resolver))
                .collect();
            if roots.is_empty() {
                roots.push(effects.run_dir.clone());
            }
            ctx.walk_stays_inside(prog, &roots)?;
            ctx.ran(prog, &[], &effects.run_dir, effects.named);
            Ok(())
        }
        "vitest" => vitest(args, ctx, cwd),
        _ => package_manager(prog, args, ctx, cwd),
    }
}

fn vitest(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let args = match args.first().map(|w| w.text.as_ref()) {
        Some("run") => &args[1..],
        Some(w) if matches!(w, "watch" | "dev" | "bench" | "init" | "list") => {
            return Err(no(format!("vitest {w} is not routine")));
        }
        _ => args,
    };
    let spec = Spec::gnu(VITEST).loose();
    for arg in parse("vitest", &spec, args)? {
        if let Arg::Opt(o, Some(v)) = &arg
            && o.names[0] == "--reporter"
            && !VITEST_REPORTERS.contains(&v.text.as_ref())
        {
            return Err(no(format!(
                "vitest --reporter {}: not a built-in reporter (a path is code vitest loads)",
                v.text
            )));
        }
    }
    let effects = writer("vitest", &spec, args, ctx, cwd)?;
    ctx.walk_stays_inside("vitest", std::slice::from_ref(&effects.run_dir))?;
    ctx.ran("vitest", &[], &effects.run_dir, effects.named);
    Ok(())
}

fn package_manager(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = Spec::gnu(PM);
    let parsed = parse(prog, &spec, args)?;
    let mut words = positionals(&parsed);
    let Some(sub) = words.next() else {
        return if parsed.iter().any(|a| a.is("--version")) {
            Ok(())
        } else {
            Err(no(format!("{prog} without a script")))
        };
    };
    if !PM_SUBCOMMANDS.contains(&sub.text.as_ref()) {
        return Err(no(format!("{prog} {} is not a routine subcommand", sub.text)));
    }
    if matches!(sub.text.as_ref(), "run" | "run-script")
        && let Some(script) = words.next()
        && script.text == "env"
    {
        return Err(no(format!(
            "{prog} {} env prints the whole environment (the conversation's credentials with it): credential access",
            sub.text
        )));
    }
    let effects = writer(prog, &spec, args, ctx, cwd)?;
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_ref()).collect();
    ctx.ran(prog, &texts, &effects.run_dir, effects.named);
    Ok(())
}
