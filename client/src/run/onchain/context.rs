//! What a run on chain fixes before anything is sent ([`Prepared`], [`prepare`]) and what its
//! stages share ([`Context`]): the run's address, the expected run, and the transactions
//! each stage sends (the start, the steps and the close).

use super::expected::{expected, Expected};
use super::items::{close_run_item, start_item, step_item};
use super::pipeline::{step_window, BLOCKS_IN_FLIGHT};
use super::request::{default_steps, RunOnChainError, RunRequest};
use crate::send::transport::Transport;
use crate::send::Item;
use curta_core::Artifact;
use curta_interface::instruction::{self as ix, OwnedPrompt};
use curta_interface::run::{run_address, run_len, run_seed, RunHeader, SeedSource};
use curta_interface::state::{model_bytes, MAX_MODEL_BYTES, MODEL_LEN, WEIGHT_HEADER_LEN};
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::cell::Cell;

/// Everything fixed before anything is sent: the sealed model, the expected run, the run's address.
pub(super) struct Prepared {
    pub(super) hash: [u8; 32],
    pub(super) weights: Vec<Pubkey>,
    /// Each section's length, as the model records them.
    pub(super) lengths: Vec<u32>,
    /// Whether the model's accounts and the run fit what one transaction may load: then every
    /// step carries every section, else each carries the sections its items read.
    pub(super) carries_all: bool,
    /// The sections (bit s for section s) the first step of the last round read: what a step
    /// simulated to explain a refusal carries.
    pub(super) last_reads: Cell<u32>,
    pub(super) expected: Expected,
    pub(super) steps: u32,
    pub(super) address: Pubkey,
    pub(super) len: usize,
    /// The last step ticket used. Tickets only make each step transaction unique: they start
    /// from the clock, where no earlier call of this runner is likely to have been.
    pub(super) tickets: Cell<u32>,
}

impl Prepared {
    /// Steps in flight under a per-account limit of `limit` units: three blocks' worth
    /// ([`step_window`]) when every step carries every section, so that any step does any
    /// item wherever it lands; one block's worth otherwise: a step carries the sections of the
    /// steps planned around it, and the further ahead steps are sent, the more of them land
    /// where the run needs a section they do not carry (refused, `SectionNotLoaded`, and sent
    /// again).
    pub(super) fn window(&self, limit: u64) -> usize {
        match self.carries_all {
            true => step_window(limit),
            false => (step_window(limit) / BLOCKS_IN_FLIGHT as usize).max(1),
        }
    }
}

/// What the run address holds, checked against this request.
pub(super) enum Existing {
    /// Nothing, or lamports someone sent there (the start tops them up instead of creating).
    Fresh { funded: u64 },
    /// This very run, at the steps that landed so far.
    Resume(Box<RunHeader>),
}

/// What every stage reads.
pub(super) struct Context<'a> {
    pub(super) program: Pubkey,
    pub(super) runner: Pubkey,
    pub(super) model: Pubkey,
    pub(super) request: &'a RunRequest,
    pub(super) p: &'a Prepared,
}

impl<'a> Context<'a> {
    pub(super) fn new<T: Transport>(
        t: &T,
        runner: &Keypair,
        model: &Pubkey,
        request: &'a RunRequest,
        p: &'a Prepared,
    ) -> Context<'a> {
        Context {
            program: t.program_id(),
            runner: runner.pubkey(),
            model: *model,
            request,
            p,
        }
    }

    /// A step that reads the sections `reads` (bit s for section s; section zero always) and
    /// also carries those of `near` that fit.
    pub(super) fn step_item(&self, ticket: u32, reads: u32, near: u32) -> Item {
        self.step_carrying(ticket, &self.step_weights(reads, near).0)
    }

    /// A step carrying `weights`.
    pub(super) fn step_carrying(&self, ticket: u32, weights: &[Pubkey]) -> Item {
        step_item(ix::step(
            &self.program,
            &self.p.address,
            &self.model,
            weights,
            ticket,
            self.request.budget,
        ))
    }

    /// The weight accounts a step carries: every section's where the model's accounts and the
    /// run fit what one transaction may load (so that any step in flight can do any item),
    /// else section zero's, those of `reads` and then those of `near` (the sections of the
    /// steps planned around it: a step that lands before or after its neighbour still finds
    /// what it reads), in section order, as many as fit together. `false` when some of
    /// `reads` did not fit: the step stops before the first item that reads one.
    pub(super) fn step_weights(&self, reads: u32, near: u32) -> (Vec<Pubkey>, bool) {
        let p = self.p;
        if p.carries_all {
            return (p.weights.clone(), true);
        }
        let account = |s: usize| WEIGHT_HEADER_LEN as u64 + p.lengths[s] as u64;
        let mut loaded = MODEL_LEN as u64 + p.len as u64 + account(0);
        let mut carried = 1u32;
        let mut complete = true;
        for wanted in [reads, near] {
            for s in 1..p.weights.len() {
                if wanted & !carried & (1 << s) == 0 {
                    continue;
                }
                if loaded + account(s) <= MAX_MODEL_BYTES {
                    loaded += account(s);
                    carried |= 1 << s;
                } else if wanted == reads {
                    complete = false;
                }
            }
        }
        let weights = (0..p.weights.len())
            .filter(|s| carried & (1 << s) != 0)
            .map(|s| p.weights[s])
            .collect();
        (weights, complete)
    }

    /// Step transactions under fresh tickets, one per entry of `reads` (the sections each
    /// step's items read, in the order planned), up to the first that cannot carry all of
    /// them: the steps after it would start elsewhere than planned, so the next round plans
    /// them from the chain. Each also carries what the steps planned within `window` of it
    /// read, where that fits: steps in flight together may land in any order.
    pub(super) fn next_steps(&self, reads: &[u32], window: usize) -> Vec<Item> {
        self.p.last_reads.set(reads.first().copied().unwrap_or(0));
        let mut items = Vec::with_capacity(reads.len());
        for (k, &step) in reads.iter().enumerate() {
            let around = reads[k.saturating_sub(window)..(k + window + 1).min(reads.len())].iter();
            let near = around.fold(0, |all, r| all | r);
            let ticket = self.p.tickets.get().wrapping_add(1);
            self.p.tickets.set(ticket);
            let (weights, complete) = self.step_weights(step, near);
            items.push(self.step_carrying(ticket, &weights));
            if !complete {
                break;
            }
        }
        items
    }

    pub(super) fn close_item(&self) -> Item {
        close_run_item(ix::close_run(&self.program, &self.p.address, &self.runner))
    }

    /// The run account's creation (or, where someone funded the address, the top-up, the
    /// allocation with the seed and the assignment) and StartRun, in one transaction.
    pub(super) fn start_item(&self, prompt: OwnedPrompt, rent: u64, funded: u64) -> Item {
        let (me, address, len) = (&self.runner, &self.p.address, self.p.len as u64);
        let seed = run_seed(&self.model, self.request.nonce);
        let mut instructions: Vec<Instruction> = Vec::with_capacity(4);
        if funded == 0 {
            instructions.push(
                solana_system_interface::instruction::create_account_with_seed(
                    me,
                    address,
                    me,
                    &seed,
                    rent,
                    len,
                    &self.program,
                ),
            );
        } else {
            // create_account_with_seed refuses an address that holds lamports.
            if rent > funded {
                instructions.push(solana_system_interface::instruction::transfer(
                    me,
                    address,
                    rent - funded,
                ));
            }
            instructions.push(solana_system_interface::instruction::allocate_with_seed(
                address,
                me,
                &seed,
                len,
                &self.program,
            ));
        }
        instructions.push(ix::start_run(
            &self.program,
            address,
            me,
            &self.model,
            &self.p.weights[0],
            self.request.nonce,
            self.p.steps,
            &self.request.settings,
            self.request.source,
            prompt,
        ));
        start_item(instructions)
    }
}

/// The sealed model's accounts, the prompt's tokens, the expected run and the run's address.
pub(super) async fn prepare<T: Transport>(
    t: &T,
    runner: &Keypair,
    model_address: &Pubkey,
    request: &RunRequest,
    artifact: &Artifact<'_>,
    hash: [u8; 32],
) -> Result<Prepared, RunOnChainError> {
    let sealed = crate::model::accounts::existing_model(t, model_address).await?;
    let weights: Vec<Pubkey> = sealed.weight_accounts[..sealed.sections().len()].to_vec();
    let lengths: Vec<u32> = sealed.section_lengths[..weights.len()].to_vec();
    let config = artifact.config();
    let prompt_tokens = request.prompt.tokens(artifact)?;
    let steps = request
        .steps
        .unwrap_or_else(|| default_steps(config.context_length, prompt_tokens.len()));
    let mut expected = expected(
        artifact,
        &prompt_tokens,
        steps,
        request.settings,
        request.budget,
    )?;
    if request.source == SeedSource::Drawn {
        // StartRun leaves a drawn run's generator at 0 until its first step draws the seed;
        // what follows is expected again once the seed is known
        // ([`super::start::expected_with_seed`]).
        expected.start[curta_core::infer::state::field::RNG..][..8].fill(0);
    }
    let len = run_len(&config, steps);
    Ok(Prepared {
        hash,
        carries_all: model_bytes(lengths.iter().copied()) + len <= MAX_MODEL_BYTES,
        weights,
        lengths,
        last_reads: Cell::new(0),
        expected,
        steps,
        address: run_address(
            &t.program_id(),
            &runner.pubkey(),
            model_address,
            request.nonce,
        ),
        len: len as usize,
        tickets: Cell::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos()),
        ),
    })
}
