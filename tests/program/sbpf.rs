//! The program's binaries through the loader and verifier a cluster deploys them with
//! (solana-sbpf 0.21.1 under agave 4.2.2's program runtime): the binary this suite runs, and
//! each of target/deploy/curta_program.so (SBPF v0, e_flags 0) and curta_program_v3.so (SBPF
//! v3, e_flags 3, from `scripts/build-sbf --sbpf-v3`) that is built. A deployment refuses an
//! ELF the loader or the verifier rejects; with SIMD-0500's feature
//! (`disable_sbpf_v0_v1_v2_deployment`) only v3 deploys.

use solana_program_runtime::invoke_context::InvokeContext;
use solana_sbpf::{
    elf::{ElfError, Executable},
    program::{BuiltinProgram, SBPFVersion},
    verifier::RequisiteVerifier,
};
use std::path::PathBuf;
use std::sync::Arc;

type Loader = BuiltinProgram<InvokeContext<'static, 'static>>;

/// The environment a deployment loads with on a cluster where every feature of agave 4.2.2 is
/// active (program-test's default), as `deploy_program` builds it: broken ELFs rejected,
/// `sol_alloc_free_` not offered, and with `v3_only` the versions SIMD-0500 leaves.
fn deployment_loader(v3_only: bool) -> Arc<Loader> {
    let runtime = solana_syscalls::create_program_runtime_environment(
        &solana_svm_feature_set::SVMFeatureSet::all_enabled(),
        &solana_program_runtime::execution_budget::SVMTransactionExecutionBudget::new_with_defaults(
            true,
        ),
        true,
        false,
    )
    .expect("the runtime environment");
    let mut config = (*runtime).get_config().clone();
    config.reject_broken_elfs = true;
    if v3_only {
        config.enabled_sbpf_versions = SBPFVersion::V3..=*config.enabled_sbpf_versions.end();
    }
    let mut loader = Loader::new_loader(config);
    for (_key, (name, function)) in (*runtime).get_function_registry().iter() {
        if name != *b"sol_alloc_free_" {
            loader
                .register_function(std::str::from_utf8(name).unwrap(), function)
                .unwrap();
        }
    }
    Arc::new(loader)
}

/// Loads and verifies `elf` as a deployment would; the version it loaded as.
fn deploy(elf: &[u8], v3_only: bool) -> Result<SBPFVersion, String> {
    let executable = Executable::<InvokeContext>::load(elf, deployment_loader(v3_only))
        .map_err(|e| format!("loader: {e:?}"))?;
    executable
        .verify::<RequisiteVerifier>()
        .map_err(|e| format!("verifier: {e:?}"))?;
    Ok(executable.get_sbpf_version())
}

fn e_flags(elf: &[u8]) -> u32 {
    u32::from_le_bytes(elf[48..52].try_into().unwrap())
}

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("deploy")
}

#[test]
fn the_binary_under_test_loads_and_verifies_as_its_e_flags_say() {
    let so = curta_tests::program_so();
    let version = deploy(&so.bytes, false).unwrap_or_else(|e| panic!("{}: {e}", so.describe()));
    let expected = match e_flags(&so.bytes) {
        0 => SBPFVersion::V0,
        3 => SBPFVersion::V3,
        other => panic!("{}: e_flags {other}, expected 0 or 3", so.describe()),
    };
    assert_eq!(version, expected);
}

#[test]
fn each_built_binary_has_its_version_and_v3_alone_deploys_under_simd_0500() {
    let mut checked = 0;
    for (file, flags, version) in [
        ("curta_program.so", 0, SBPFVersion::V0),
        ("curta_program_v3.so", 3, SBPFVersion::V3),
    ] {
        let path = deploy_dir().join(file);
        let Ok(elf) = std::fs::read(&path) else {
            eprintln!("{} is not built: not checked", path.display());
            continue;
        };
        checked += 1;
        assert_eq!(e_flags(&elf), flags, "{}", path.display());
        assert_eq!(
            deploy(&elf, false),
            Ok(version),
            "{} deploys where v0 to v3 are enabled",
            path.display()
        );
        let v3_only = deploy(&elf, true);
        if version == SBPFVersion::V3 {
            assert_eq!(v3_only, Ok(version), "{}", path.display());
        } else {
            assert_eq!(
                v3_only,
                Err(format!("loader: {:?}", ElfError::UnsupportedSBPFVersion)),
                "{} is refused once v0 to v2 deployment is disabled",
                path.display()
            );
        }
    }
    assert!(checked > 0, "no binary in {}", deploy_dir().display());
}
