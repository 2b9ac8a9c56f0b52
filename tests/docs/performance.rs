//! docs/performance.md's figures against `scripts/callgrind-baseline.txt`, and the README's
//! figures against docs/performance.md.

use super::*;

#[test]
fn readme_figures_are_rows_of_performance_md() {
    let readme = read("README.md");
    let from = readme.find("## Figures").expect("README: ## Figures");
    let rest = &readme[from + 3..];
    let figures = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let performance = read("docs/performance.md");
    let rows = table_rows(figures);
    assert!(rows.len() >= 9, "{rows:?}");
    let missing: Vec<&&str> = rows
        .iter()
        .filter(|r| !performance.lines().any(|l| l == **r))
        .collect();
    assert!(
        missing.is_empty(),
        "README's figures that docs/performance.md does not have, row for row: {missing:#?}"
    );
}

/// The rows of scripts/callgrind-baseline.txt: label → its numbers (total and own, or for a
/// `bus|` row reads and writes).
fn callgrind_baseline() -> std::collections::BTreeMap<String, Vec<f64>> {
    read("scripts/callgrind-baseline.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let parts: Vec<&str> = l.split('|').collect();
            let (label, numbers) = if parts[0] == "bus" {
                (format!("bus|{}", parts[1]), &parts[2..])
            } else {
                (parts[0].to_owned(), &parts[1..])
            };
            let numbers = numbers.iter().map(|n| n.trim().parse().unwrap()).collect();
            (label, numbers)
        })
        .collect()
}

/// docs/performance.md's figures that `scripts/callgrind-gate.sh` keeps: (section, the row's
/// first cell, column, baseline label, index of the baseline number). The gate compares each
/// measurement with the baseline file, and this test the page with the same file.
const BASELINE_ROWS: &[(&str, &str, usize, &str, usize)] = &[
    (
        "## Scaling",
        "native-fence destroy, oldest first: 10,000 → 80,000 fences (OS + KMD)",
        2,
        "native-fence destroy among 10,000 fences",
        0,
    ),
    (
        "## Scaling",
        "native-fence destroy, oldest first: 10,000 → 80,000 fences (OS + KMD)",
        3,
        "native-fence destroy among 80,000 fences",
        0,
    ),
    (
        "## Scaling",
        "of which the KMD's close and destroy",
        2,
        "native-fence destroy among 10,000 fences",
        1,
    ),
    (
        "## Scaling",
        "of which the KMD's close and destroy",
        3,
        "native-fence destroy among 80,000 fences",
        1,
    ),
    (
        "## Submission",
        "user mode: `UserQueue::submit`",
        2,
        "UserQueue::submit, one FILL (user mode)",
        0,
    ),
    (
        "## Submission",
        "floor: the same stores and doorbell",
        2,
        "floor: the same stores + the same doorbell store",
        0,
    ),
    (
        "## Submission",
        "kernel mode: `KernelQueue::submit` → `DxgkDdiSubmitCommandToHwQueue`",
        2,
        "KernelQueue::submit, one FILL (UMD + thunk + KMD)",
        0,
    ),
    (
        "## Bus cost",
        "ISR per native-fence signal, MSI (INTx)",
        2,
        "bus|DxgkDdiInterruptRoutine, native-fence signal, MSI",
        0,
    ),
    (
        "## Bus cost",
        "ISR per legacy monitored-fence signal, MSI",
        2,
        "bus|DxgkDdiInterruptRoutine, legacy monitored fence, MSI",
        0,
    ),
    (
        "## Bus cost",
        "ISR per legacy monitored-fence signal, MSI",
        3,
        "bus|DxgkDdiInterruptRoutine, legacy monitored fence, MSI",
        1,
    ),
    (
        "## Bus cost",
        "SubmitCommandToHwQueue",
        3,
        "bus|DxgkDdiSubmitCommandToHwQueue",
        1,
    ),
    (
        "## Bus cost",
        "user-mode submission",
        3,
        "bus|user-mode submission (UMD, no DDI)",
        1,
    ),
    (
        "## The shipped image",
        "ISR, one native-fence signal",
        2,
        "rvgpu.sys: DxgkDdiInterruptRoutine (signal)",
        0,
    ),
    (
        "## The shipped image",
        "ISR, one native-fence signal",
        3,
        "DxgkDdiInterruptRoutine, native fence signal (one event)",
        1,
    ),
    (
        "## The shipped image",
        "UpdateMonitoredValues, one fence (24H2: `FENCE_STORE`)",
        2,
        "rvgpu.sys: DxgkDdiUpdateMonitoredValues",
        0,
    ),
    (
        "## The shipped image",
        "UpdateMonitoredValues, one fence (24H2: `FENCE_STORE`)",
        3,
        "DxgkDdiUpdateMonitoredValues (one fence)",
        1,
    ),
    (
        "## The shipped image",
        "SubmitCommandToHwQueue",
        2,
        "rvgpu.sys: DxgkDdiSubmitCommandToHwQueue",
        0,
    ),
    (
        "## The shipped image",
        "SubmitCommandToHwQueue",
        3,
        "of which DxgkDdiSubmitCommandToHwQueue",
        1,
    ),
    (
        "## The shipped image",
        "ConnectDoorbell, victimising (with the re-entrant DisconnectDoorbell)",
        2,
        "rvgpu.sys: DxgkDdiConnectDoorbell (victimising)",
        0,
    ),
    (
        "## The shipped image",
        "ConnectDoorbell, victimising (with the re-entrant DisconnectDoorbell)",
        3,
        "DxgkDdiConnectDoorbell, victimising",
        1,
    ),
    (
        "## The shipped image",
        "DPC, per signal (24H2's fence work runs inside it)",
        2,
        "rvgpu.sys: DxgkDdiDpcRoutine (signal)",
        0,
    ),
    (
        "## The shipped image",
        "`rvgpu_submit`, one FILL",
        2,
        "rvgpu_umd.dll: rvgpu_submit (one FILL, user mode)",
        0,
    ),
    (
        "## The shipped image",
        "`rvgpu_queue_submit`, one GPU fence signal",
        2,
        "rvgpu_umd.dll: rvgpu_queue_submit of one GPU signal",
        0,
    ),
    (
        "## The shipped image",
        "`rvgpu_fence_signal` (CPU)",
        2,
        "rvgpu_umd.dll: rvgpu_fence_signal",
        0,
    ),
    (
        "## The shipped image",
        "`rvgpu_fence_wait`, a value already reached (no kernel call)",
        2,
        "rvgpu_umd.dll: rvgpu_fence_wait of a reached value",
        0,
    ),
    (
        "## The shipped image",
        "`rvgpu_fence_value` (the handle lookup, a load and a store)",
        2,
        "rvgpu_umd.dll: rvgpu_fence_value",
        0,
    ),
];

/// The instruction counts and bus accesses docs/performance.md gives are the baseline's.
#[test]
fn performance_rows_are_the_callgrind_baseline() {
    let doc = read("docs/performance.md");
    let baseline = callgrind_baseline();
    let mut bad = Vec::new();
    for &(heading, first, column, label, index) in BASELINE_ROWS {
        let Some(from) = doc.find(&format!("\n{heading}\n")) else {
            bad.push(format!("docs/performance.md: no `{heading}`"));
            continue;
        };
        let rest = &doc[from + heading.len() + 2..];
        let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
        let row = table_rows(section)
            .into_iter()
            .find(|r| r.split('|').nth(1).map(str::trim) == Some(first));
        let Some(row) = row else {
            bad.push(format!("docs/performance.md {heading}: no row `{first}`"));
            continue;
        };
        let cell = row.split('|').nth(column).unwrap_or("").trim();
        let number: String = cell
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
            .filter(|c| *c != ',')
            .collect();
        let Some(want) = baseline.get(label).and_then(|v| v.get(index)) else {
            bad.push(format!("scripts/callgrind-baseline.txt: no `{label}`"));
            continue;
        };
        if number.parse::<f64>().ok() != Some(*want) {
            bad.push(format!(
                "docs/performance.md {heading}, `{first}`: `{cell}`, the baseline's `{label}` is {want}"
            ));
        }
    }
    none_bad(
        &bad,
        "docs/performance.md against scripts/callgrind-baseline.txt",
    );
}
