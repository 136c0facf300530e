//! `rehearse`, `rehearse-run` and `demo`: the full publish + seal (and a run) on an in-process
//! bank running the real program, with the same report, and no validator or lamport needed.

use crate::artifact::LocalArtifact;
use crate::model::{fetch_sealed, publish, publish_artifact, verify, FetchError};
use crate::model::{Report, Verification};
use crate::run::onchain::{run_on_chain, OnChainRun, RunOnChainError, RunRequest};
use crate::run::{generate, Generation, Prompt};
use crate::send::transport::BankTransport;
use crate::{Error, Options};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::time::Instant;

/// Lamports given to the rehearsal's authority (rent for 18 full sections is about 1,314 SOL).
pub const REHEARSAL_FUNDS: u64 = 10_000 * 1_000_000_000;

/// The bundled llama2.c model and tokenizer (models/ of this repository, 1 MB + 6 KB): the
/// reference tests' model.
pub const STORIES260K: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/stories260K.bin"
));
pub const TOK512: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tok512.bin"));

/// The demo's model: a llama2.c-architecture model trained here on the King James Bible with
/// its own tokenizer (models/README.md, scripts/train-model), so that its text reads as English.
pub const KJV: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/kjv.bin"));
pub const TOK1024: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/tok1024.bin"
));

/// A fresh bank and a funded authority for a rehearsal.
pub async fn rehearsal_bank() -> Result<(BankTransport, Keypair), Error> {
    let authority = Keypair::new();
    let bank = BankTransport::try_start(&[(authority.pubkey(), REHEARSAL_FUNDS)]).await?;
    Ok((bank, authority))
}

/// Publishes and seals `file` on a fresh in-process bank running the program at
/// `program_id`. With `authority` (the keypair a real publish would use) the bank funds it
/// and the report's model address is the one that publish will create on a cluster where the
/// program is deployed at `program_id`; without, a throwaway keypair.
pub async fn rehearse(
    file: &[u8],
    authority: Option<&Keypair>,
    program_id: &Pubkey,
    options: &Options,
) -> Result<Report, Error> {
    // Decoded before the bank starts, so that a bad file fails at once.
    let artifact = LocalArtifact::decode(file)?;
    let throwaway = Keypair::new();
    let authority = authority.unwrap_or(&throwaway);
    let bank =
        BankTransport::try_start_at(&[(authority.pubkey(), REHEARSAL_FUNDS)], *program_id).await?;
    let mut report = publish_artifact(&bank, authority, &artifact, true, options).await?;
    report.command = "rehearse";
    Ok(report)
}

/// Publishes and seals `file` on a fresh in-process bank running the program at
/// `program_id` (as [`rehearse`]), then runs the sealed model on chain there
/// ([`crate::run::onchain::run_on_chain`]), the authority being the runner.
pub async fn rehearse_run(
    file: &[u8],
    authority: Option<&Keypair>,
    program_id: &Pubkey,
    options: &Options,
    request: &RunRequest,
    on_token: impl FnMut(u32, &[u8]),
) -> Result<(Report, OnChainRun), RunOnChainError> {
    let artifact = LocalArtifact::decode(file)?;
    let throwaway = Keypair::new();
    let authority = authority.unwrap_or(&throwaway);
    let bank =
        BankTransport::try_start_at(&[(authority.pubkey(), REHEARSAL_FUNDS)], *program_id).await?;
    let mut report = publish_artifact(&bank, authority, &artifact, true, options).await?;
    report.command = "rehearse-run";
    let run = run_on_chain(&bank, authority, &report.model, request, on_token).await?;
    Ok((report, run))
}

pub struct Demo {
    pub artifact_bytes: usize,
    pub convert_seconds: f64,
    pub report: Report,
    pub verification: Verification,
    /// The sealed model read back from the bank and run: greedy, [`DEMO_STEPS`] tokens after
    /// [`DEMO_PROMPT`].
    pub generation: Generation,
    /// The same run inside the program (`run --on-chain` on the bank): its text equals
    /// `generation`'s, byte for byte, or the demo fails.
    pub on_chain: OnChainRun,
}

/// The demo's prompt and length (curta-core's tests/kjv.rs checks that this greedy text is
/// English).
pub const DEMO_PROMPT: &str = "In the beginning God";
pub const DEMO_STEPS: u32 = 64;

/// Converts the bundled English model (kjv + tok1024), rehearses it and verifies the on-chain
/// bytes.
pub async fn demo(options: &Options) -> Result<Demo, Error> {
    let started = Instant::now();
    let artifact = curta_core::convert::convert(KJV, TOK1024).map_err(|error| Error::Convert {
        what: "the bundled kjv and tok1024",
        error,
    })?;
    let convert_seconds = started.elapsed().as_secs_f64();
    let (bank, authority) = rehearsal_bank().await?;
    let mut report = publish(&bank, &authority, &artifact, true, options).await?;
    report.command = "demo";
    let verification = verify(&bank, &report.model, &artifact).await?;
    let model = report.model;
    let bad = |problem: String| Error::BadModel {
        address: model,
        problem,
    };
    let (sealed, _) = fetch_sealed(&bank, &model).await.map_err(|e| match e {
        FetchError::Client(e) => e,
        other => bad(other.to_string()),
    })?;
    let run = || -> Result<Generation, curta_core::infer::RunError> {
        let sealed = curta_core::decode(&sealed)?;
        let prompt = Prompt::Text(DEMO_PROMPT.as_bytes().to_vec()).tokens(&sealed)?;
        let greedy = curta_core::infer::Settings::greedy();
        generate(&sealed, &prompt, DEMO_STEPS, greedy, 1, |_, _| {})
    };
    let generation = run().map_err(|e| bad(format!("running it: {e}")))?;
    // The same prompt inside the program: the runner creates the run account, steps it and
    // closes it, every lamport of rent back.
    let request = RunRequest::new(
        Prompt::Text(DEMO_PROMPT.as_bytes().to_vec()),
        Some(DEMO_STEPS),
        curta_core::infer::Settings::greedy(),
    );
    let on_chain = run_on_chain(&bank, &authority, &model, &request, |_, _| {})
        .await
        .map_err(|e| bad(format!("running it on chain: {e}")))?;
    if on_chain.tokens != generation.tokens || on_chain.text != generation.text {
        return Err(bad(format!(
            "the run on chain gave {:?} ({:?}), off chain {:?} ({:?})",
            on_chain.text, on_chain.tokens, generation.text, generation.tokens
        )));
    }
    Ok(Demo {
        artifact_bytes: artifact.len(),
        convert_seconds,
        report,
        verification,
        generation,
        on_chain,
    })
}
