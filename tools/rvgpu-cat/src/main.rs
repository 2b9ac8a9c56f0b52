//! rvgpu-cat: writes and checks the driver package's catalog (scripts/package.sh).
//!
//!   rvgpu-cat make  DIR OUT   write the unsigned catalog of DIR/rvgpu.inf's package to OUT
//!   rvgpu-cat check DIR       check DIR's catalog (the INF's CatalogFile) against DIR's files,
//!                             and that every image carries DriverVer as its file version
//!   rvgpu-cat dump  CAT       print a catalog's attributes and members
//!   rvgpu-cat verify CAT      check a catalog's signature and print its signer
//!
//! The INF is DIR/rvgpu.inf unless RVGPU_INF names another file in DIR.

use std::path::Path;
use std::process::ExitCode;

use rvgpu_cat::{hex, Error};

fn inf_name() -> String {
    std::env::var("RVGPU_INF").unwrap_or_else(|_| "rvgpu.inf".to_string())
}

fn make(dir: &Path, out: &Path) -> Result<(), Error> {
    let inf = inf_name();
    let (facts, files) = rvgpu_cat::package_files(dir, &inf)?;
    let Some(cat) = facts.catalog_file.as_deref() else {
        return Err(Error(format!("{inf} has no CatalogFile in [Version]")));
    };
    // The catalog name the INF gives is the file Windows looks for; a catalog written under
    // another name would not be found.
    let out_name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !out_name.eq_ignore_ascii_case(cat) && !out_name.starts_with(&format!("{cat}.")) {
        return Err(Error(format!(
            "{inf} names the catalog {cat}, not {out_name}"
        )));
    }
    if facts.driver_ver.as_deref().unwrap_or("").is_empty() {
        return Err(Error(format!(
            "{inf} has no DriverVer: stamp it before cataloguing"
        )));
    }
    let mut attrs = vec![("OS".to_string(), rvgpu_cat::CATALOG_OS.to_string())];
    for (i, id) in facts.hardware_ids.iter().enumerate() {
        attrs.push((format!("HWID{}", i + 1), id.clone()));
    }
    let der = rvgpu_cat::write_catalog(&files, &attrs, std::time::SystemTime::now())?;
    std::fs::write(out, der).map_err(|e| Error(format!("{}: {e}", out.display())))?;
    for f in &files {
        println!(
            "rvgpu-cat: {:<16} {} SHA-1 {} SHA-256 {}",
            f.name,
            if f.pe { "PE  " } else { "flat" },
            hex(&f.sha1),
            hex(&f.sha256)
        );
    }
    Ok(())
}

fn read(path: &Path) -> Result<rvgpu_cat::Catalog, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
    rvgpu_cat::read_catalog(&bytes).map_err(|e| Error(format!("{}: {e}", path.display())))
}

fn check(dir: &Path) -> Result<(), Error> {
    let inf = inf_name();
    let (facts, _) = rvgpu_cat::package_files(dir, &inf)?;
    let Some(cat) = facts.catalog_file.clone() else {
        return Err(Error(format!("{inf} has no CatalogFile in [Version]")));
    };
    let catalog = read(&dir.join(&cat))?;
    let mut problems = rvgpu_cat::check_package(dir, &inf, &catalog);
    problems.extend(rvgpu_cat::check_file_versions(dir, &facts));
    if problems.is_empty() {
        println!(
            "rvgpu-cat: {cat} lists the {} files of {inf} with matching hashes ({} members, {} signer(s)); the images carry DriverVer as their file version",
            catalog.members.len() / 2,
            catalog.members.len(),
            catalog.signers
        );
        Ok(())
    } else {
        Err(Error(format!(
            "{cat} does not match the package:\n  {}",
            problems.join("\n  ")
        )))
    }
}

fn dump(path: &Path) -> Result<(), Error> {
    let catalog = read(path)?;
    println!("subject algorithm {}", catalog.subject_algorithm);
    println!("signers {}", catalog.signers);
    for (name, value) in &catalog.attributes {
        println!("attribute {name} = {value}");
    }
    for m in &catalog.members {
        println!(
            "member {} File={:?} OSAttr={:?} memberinfo2={:?} digest={:?}",
            hex(&m.tag),
            m.file,
            m.os_attr,
            m.member_info2,
            m.digest
                .as_ref()
                .map(|(k, a, d)| format!("{k:?} {a} {}", hex(d)))
        );
    }
    Ok(())
}

fn verify(path: &Path) -> Result<(), Error> {
    let bytes = std::fs::read(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
    let signed = rvgpu_cat::signature::verify(&bytes)
        .map_err(|e| Error(format!("{}: {e}", path.display())))?;
    println!(
        "signature ok, signer {}",
        rvgpu_cat::signature::subject(&signed.signer)
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["make", dir, out] => make(Path::new(dir), Path::new(out)),
        ["check", dir] => check(Path::new(dir)),
        ["dump", cat] => dump(Path::new(cat)),
        ["verify", cat] => verify(Path::new(cat)),
        _ => {
            eprintln!("usage: rvgpu-cat make DIR OUT | check DIR | dump CAT | verify CAT");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rvgpu-cat: {e}");
            ExitCode::FAILURE
        }
    }
}
