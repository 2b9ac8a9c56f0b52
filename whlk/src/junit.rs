//! A JUnit XML report, written by hand (no XML crate): one `<testsuite>` named after the
//! backend, one `<testcase>` per case with `<failure>` or `<skipped>`, and the requirement IDs
//! as a property.

use std::fmt::Write as _;

use crate::case::Outcome;
use crate::runner::{totals, CaseReport};

/// Escapes text for XML content and attribute values. Characters XML 1.0 cannot carry at all
/// (most C0 controls) become `\u{..}` text so a stray byte in a message cannot make the report
/// unreadable.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Renders the report.
pub fn render(backend: &str, reports: &[CaseReport]) -> String {
    let (_, failed, skipped) = totals(reports);
    let total_time: f64 = reports.iter().map(|r| r.duration.as_secs_f64()).sum();
    let mut x = String::new();
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        x,
        r#"<testsuites name="rvgpu-whlk" tests="{}" failures="{failed}" skipped="{skipped}" time="{total_time:.3}">"#,
        reports.len()
    );
    let _ = writeln!(
        x,
        r#"  <testsuite name="{}" tests="{}" failures="{failed}" errors="0" skipped="{skipped}" time="{total_time:.3}">"#,
        escape(backend),
        reports.len()
    );
    for r in reports {
        let (class, name) = r.name.split_once('.').unwrap_or(("whlk", r.name));
        let _ = writeln!(
            x,
            r#"    <testcase classname="{}" name="{}" time="{:.3}">"#,
            escape(class),
            escape(name),
            r.duration.as_secs_f64()
        );
        let _ = writeln!(x, "      <properties>");
        let _ = writeln!(
            x,
            r#"        <property name="requirements" value="{}"/>"#,
            escape(&r.requirements.join(" "))
        );
        let _ = writeln!(x, "      </properties>");
        match &r.outcome {
            Outcome::Pass => {}
            Outcome::Fail(m) => {
                let first = m.lines().next().unwrap_or_default();
                let _ = writeln!(
                    x,
                    r#"      <failure message="{}">{}</failure>"#,
                    escape(first),
                    escape(m)
                );
            }
            Outcome::Skip(m) => {
                let _ = writeln!(x, r#"      <skipped message="{}"/>"#, escape(m));
            }
        }
        let _ = writeln!(x, "    </testcase>");
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            escape(r#"<a & "b" 'c'>"#),
            "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;"
        );
        assert_eq!(escape("x\u{1}y"), "x\\u{1}y");
        assert_eq!(escape("line\nnext"), "line\nnext");
    }

    #[test]
    fn renders_failure_and_skip() {
        let reports = [
            CaseReport {
                name: "Adapter.StartStop",
                requirements: &["DDI-01"],
                outcome: Outcome::Pass,
                duration: Duration::from_millis(3),
                timelines: Vec::new(),
            },
            CaseReport {
                name: "Simulation.X",
                requirements: &[],
                outcome: Outcome::Fail("bad <thing>".into()),
                duration: Duration::ZERO,
                timelines: Vec::new(),
            },
            CaseReport {
                name: "Plain",
                requirements: &[],
                outcome: Outcome::Skip("no".into()),
                duration: Duration::ZERO,
                timelines: Vec::new(),
            },
        ];
        let x = render("sim", &reports);
        assert!(x.contains(r#"<testcase classname="Adapter" name="StartStop""#));
        assert!(x.contains(r#"<failure message="bad &lt;thing&gt;">bad &lt;thing&gt;</failure>"#));
        assert!(x.contains(r#"<skipped message="no"/>"#));
        assert!(x.contains(r#"tests="3" failures="1" errors="0" skipped="1""#));
    }
}
