//! The bank the program tests run in, and the steps of publishing a model through it.

use curta_program::instruction as ix;
use curta_program::state::{self, Model, WeightHeader, WEIGHT_HEADER_LEN};
use curta_tests::program_test;
use solana_instruction::error::InstructionError;
use solana_instruction::Instruction;
use solana_program_test::ProgramTestContext;
use solana_pubkey::Pubkey;
use solana_sdk::account::Account;
use solana_sdk::signature::{Keypair, Signer};
use solana_sdk::transaction::{Transaction, TransactionError};
use solana_system_interface::instruction as system_instruction;

pub const PROGRAM: Pubkey = curta_program::ID;
pub const SOL: u64 = 1_000_000_000;

/// A bank with the program, a fee payer (the context's) and a funded authority that never pays
/// fees, so its balance changes only by what the instructions move.
pub struct Bank {
    pub ctx: ProgramTestContext,
    pub authority: Keypair,
    /// Another funded signer, with models of its own.
    pub mallory: Keypair,
    pub rent: solana_sdk::rent::Rent,
    sent: std::collections::HashSet<solana_sdk::signature::Signature>,
}

pub fn funded(lamports: u64) -> Account {
    Account {
        lamports,
        data: vec![],
        owner: solana_system_interface::program::ID,
        executable: false,
        rent_epoch: 0,
    }
}

impl Bank {
    pub async fn start() -> Bank {
        Bank::start_with(|_| {}).await
    }

    /// Starts a bank after `setup` has added accounts to the ProgramTest.
    pub async fn start_with(setup: impl FnOnce(&mut solana_program_test::ProgramTest)) -> Bank {
        Bank::start_as(Keypair::new(), setup).await
    }

    /// Starts a bank with a given authority (funded with 1,000 SOL) and a second funded
    /// signer, `mallory`, after `setup` has added accounts.
    pub async fn start_as(
        authority: Keypair,
        setup: impl FnOnce(&mut solana_program_test::ProgramTest),
    ) -> Bank {
        let mallory = Keypair::new();
        let mut test = program_test();
        test.add_account(authority.pubkey(), funded(1_000 * SOL));
        test.add_account(mallory.pubkey(), funded(1_000 * SOL));
        setup(&mut test);
        let ctx = test.start_with_context().await;
        let rent = ctx.banks_client.get_rent().await.unwrap();
        Bank {
            ctx,
            authority,
            mallory,
            rent,
            sent: Default::default(),
        }
    }

    /// Sends one transaction (fee payer = the context's payer, plus `signers`) and returns its
    /// result.
    pub async fn send(
        &mut self,
        instructions: &[Instruction],
        signers: &[&Keypair],
    ) -> Result<(), TransactionError> {
        self.send_logged(instructions, signers).await.0
    }

    /// The same, with the transaction's log messages.
    pub async fn send_logged(
        &mut self,
        instructions: &[Instruction],
        signers: &[&Keypair],
    ) -> (Result<(), TransactionError>, Vec<String>) {
        let (result, logs, _) = self.send_metered(instructions, signers).await;
        (result, logs)
    }

    /// The same, with the compute units the transaction consumed in the VM.
    pub async fn send_metered(
        &mut self,
        instructions: &[Instruction],
        signers: &[&Keypair],
    ) -> (Result<(), TransactionError>, Vec<String>, u64) {
        self.ctx.last_blockhash = self.ctx.banks_client.get_latest_blockhash().await.unwrap();
        let mut tx = self.transaction(instructions, signers);
        // A transaction identical to one already sent (e.g. a refused one retried) would be
        // AlreadyProcessed: wait for a new blockhash.
        while !self.sent.insert(tx.signatures[0]) {
            self.ctx.last_blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
            tx = self.transaction(instructions, signers);
        }
        let outcome = self
            .ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await
            .unwrap();
        let (logs, units) = outcome
            .metadata
            .map(|m| (m.log_messages, m.compute_units_consumed))
            .unwrap_or_default();
        (outcome.result, logs, units)
    }

    pub fn transaction(&self, instructions: &[Instruction], signers: &[&Keypair]) -> Transaction {
        let mut all: Vec<&Keypair> = vec![&self.ctx.payer];
        all.extend_from_slice(signers);
        Transaction::new_signed_with_payer(
            instructions,
            Some(&self.ctx.payer.pubkey()),
            &all,
            self.ctx.last_blockhash,
        )
    }

    /// Sends one transaction whose only signer and fee payer is `payer` (not the context's
    /// payer) and returns its result.
    pub async fn send_paid_by(
        &mut self,
        instructions: &[Instruction],
        payer: &Keypair,
    ) -> Result<(), TransactionError> {
        self.ctx.last_blockhash = self.ctx.banks_client.get_latest_blockhash().await.unwrap();
        let sign = |blockhash| {
            Transaction::new_signed_with_payer(
                instructions,
                Some(&payer.pubkey()),
                &[payer],
                blockhash,
            )
        };
        let mut tx = sign(self.ctx.last_blockhash);
        while !self.sent.insert(tx.signatures[0]) {
            self.ctx.last_blockhash = self.ctx.get_new_latest_blockhash().await.unwrap();
            tx = sign(self.ctx.last_blockhash);
        }
        self.ctx
            .banks_client
            .process_transaction_with_metadata(tx)
            .await
            .unwrap()
            .result
    }

    /// Replaces the account at `address` (for planting accounts no instruction could make).
    pub fn plant(&mut self, address: &Pubkey, account: Account) {
        self.ctx.set_account(address, &account.into());
    }

    /// Sends one transaction per batch of the authority's instructions; each must succeed.
    pub async fn send_many(&mut self, batches: Vec<Vec<Instruction>>, signer: &Keypair) {
        for batch in batches {
            assert_eq!(self.send(&batch, &[signer]).await, Ok(()));
        }
    }

    pub async fn account(&mut self, address: &Pubkey) -> Option<Account> {
        self.ctx.banks_client.get_account(*address).await.unwrap()
    }

    pub async fn lamports(&mut self, address: &Pubkey) -> u64 {
        self.account(address).await.map_or(0, |a| a.lamports)
    }

    pub async fn model(&mut self, address: &Pubkey) -> Model {
        Model::unpack(
            &self
                .account(address)
                .await
                .expect("model account exists")
                .data,
        )
        .unwrap()
    }

    pub async fn header(&mut self, address: &Pubkey) -> WeightHeader {
        WeightHeader::unpack(
            &self
                .account(address)
                .await
                .expect("weight account exists")
                .data,
        )
        .unwrap()
    }

    pub async fn snapshot(&mut self, addresses: &[Pubkey]) -> Vec<Option<Account>> {
        let mut out = vec![];
        for a in addresses {
            out.push(self.account(a).await);
        }
        out
    }

    /// Sends a transaction that must fail with `expected` in instruction `index`, and checks
    /// that no account in `watch` changed (data, lamports, owner).
    pub async fn refused(
        &mut self,
        instructions: &[Instruction],
        signers: &[&Keypair],
        index: u8,
        expected: InstructionError,
        watch: &[Pubkey],
    ) {
        let before = self.snapshot(watch).await;
        let result = self.send(instructions, signers).await;
        assert_eq!(
            result,
            Err(TransactionError::InstructionError(index, expected))
        );
        let after = self.snapshot(watch).await;
        for ((address, b), a) in watch.iter().zip(&before).zip(&after) {
            assert_eq!(
                b, a,
                "account {address} changed although the transaction failed"
            );
        }
    }
}

/// The error a CurtaError becomes in a transaction result.
pub fn custom(e: curta_program::error::CurtaError) -> InstructionError {
    InstructionError::Custom(e as u32)
}

/// A model being published: its address, its sections and the addresses of their weight
/// accounts.
pub struct Published {
    pub model: Pubkey,
    pub authority: Pubkey,
    pub signer: Keypair,
    pub sections: Vec<Vec<u8>>,
    pub weights: Vec<Pubkey>,
    pub declared: [u8; 32],
    /// The model's creation id (the slot of its CreateModel), which every Seal names.
    pub creation: u64,
}

impl Published {
    pub fn lengths(&self) -> Vec<u32> {
        self.sections.iter().map(|s| s.len() as u32).collect()
    }

    /// Every account of the model: the model and the weight addresses.
    pub fn accounts(&self) -> Vec<Pubkey> {
        let mut out = vec![self.model];
        out.extend(&self.weights);
        out
    }

    /// Section index and chunk within it of each chunk of the whole artifact, in order.
    pub fn chunks(&self) -> Vec<(usize, u32)> {
        let mut out = vec![];
        for (s, section) in self.sections.iter().enumerate() {
            for c in 0..section.len().div_ceil(65_536) as u32 {
                out.push((s, c));
            }
        }
        out
    }
}

/// Declares the model (weights hash = the independent SHA-256 chain unless `declared` is given).
pub async fn create(
    bank: &mut Bank,
    sections: Vec<Vec<u8>>,
    declared: Option<[u8; 32]>,
) -> Published {
    let signer = bank.authority.insecure_clone();
    create_by(bank, signer, sections, declared).await
}

/// The same, with another authority.
pub async fn create_by(
    bank: &mut Bank,
    signer: Keypair,
    sections: Vec<Vec<u8>>,
    declared: Option<[u8; 32]>,
) -> Published {
    let authority = signer.pubkey();
    let declared = declared
        .unwrap_or_else(|| curta_tests::sha256_chain(sections.iter().map(|s| s.as_slice())));
    let lengths: Vec<u32> = sections.iter().map(|s| s.len() as u32).collect();
    let (model, _) = state::model_address(&PROGRAM, &authority, &declared);
    bank.send(
        &[ix::create_model(&PROGRAM, &authority, declared, &lengths)],
        &[&signer],
    )
    .await
    .unwrap();
    let weights = (0..sections.len())
        .map(|s| state::weight_address(&PROGRAM, &authority, &model, s as u8))
        .collect();
    let creation = bank.model(&model).await.creation;
    Published {
        model,
        authority,
        signer,
        sections,
        weights,
        declared,
        creation,
    }
}

/// The system instruction creating section `section`'s weight account (rent-exempt).
pub fn create_weight(bank: &Bank, p: &Published, section: usize) -> Instruction {
    create_weight_sized(
        bank,
        p,
        section,
        WEIGHT_HEADER_LEN + p.sections[section].len(),
    )
}

/// The same with any data length.
pub fn create_weight_sized(
    bank: &Bank,
    p: &Published,
    section: usize,
    space: usize,
) -> Instruction {
    system_instruction::create_account_with_seed(
        &p.authority,
        &p.weights[section],
        &p.authority,
        &state::weight_seed(&p.model, section as u8),
        bank.rent.minimum_balance(space),
        space as u64,
        &PROGRAM,
    )
}

/// Creates and initializes every weight account (one transaction each: create_account_with_seed
/// then InitWeightAccount).
pub async fn init_all(bank: &mut Bank, p: &Published) {
    for s in 0..p.sections.len() {
        init_one(bank, p, s).await;
    }
}

pub async fn init_one(bank: &mut Bank, p: &Published, s: usize) {
    {
        let create = create_weight(bank, p, s);
        let init =
            ix::init_weight_account(&PROGRAM, &p.model, &p.weights[s], &p.authority, s as u8);
        bank.send(&[create, init], &[&p.signer]).await.unwrap();
    }
}

/// Writes every section in Writes of MAX_WRITE_BYTES, `per_tx` Writes per transaction.
pub async fn write_all(bank: &mut Bank, p: &Published, per_tx: usize) {
    for s in 0..p.sections.len() {
        write_section(bank, p, s, per_tx).await;
    }
}

pub async fn write_section(bank: &mut Bank, p: &Published, s: usize, per_tx: usize) {
    let writes: Vec<Instruction> = p.sections[s]
        .chunks(ix::MAX_WRITE_BYTES)
        .enumerate()
        .map(|(i, bytes)| {
            ix::write(
                &PROGRAM,
                &p.weights[s],
                &p.authority,
                (i * ix::MAX_WRITE_BYTES) as u32,
                bytes,
            )
        })
        .collect();
    let batches = writes.chunks(per_tx).map(|b| b.to_vec()).collect();
    bank.send_many(batches, &p.signer).await;
}

/// create + init + write every section.
pub async fn written(bank: &mut Bank, sections: Vec<Vec<u8>>) -> Published {
    let p = create(bank, sections, None).await;
    init_all(bank, &p).await;
    write_all(bank, &p, 16).await;
    p
}

/// Sends the Seal of chunk `chunk` in its own transaction: chunk 0 (the start of a pass) with
/// the authority signing and the largest compute-unit limit, any later chunk with no signer but
/// the context's fee payer.
pub async fn seal_chunk(
    bank: &mut Bank,
    p: &Published,
    pass: u32,
    chunk: u32,
) -> Result<(), TransactionError> {
    let (s, _) = p.chunks()[chunk as usize];
    if chunk == 0 {
        let start = ix::start_seal(
            &PROGRAM,
            &p.model,
            &p.weights,
            &p.authority,
            p.creation,
            pass,
        );
        // Chunk 0 checks every sorted token id: a 32,000-token model's is over the default
        // 200,000 units. The limit goes after the seal (the runtime reads it wherever it is),
        // so that the seal's refusals are instruction 0's.
        let limit =
            solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(
                1_400_000,
            );
        bank.send(&[start, limit], &[&p.signer]).await
    } else {
        let seal = ix::seal(&PROGRAM, &p.model, &p.weights[s], p.creation, pass, chunk);
        bank.send(&[seal], &[]).await
    }
}

/// Sends one Seal for every chunk, in order, each in its own transaction.
pub async fn seal_all(bank: &mut Bank, p: &Published, pass: u32) {
    for chunk in 0..p.chunks().len() as u32 {
        seal_chunk(bank, p, pass, chunk).await.unwrap();
    }
}

/// Moves the bank to the next slot (solana-program-test's bank stays in one slot otherwise);
/// blockhashes of the slot before stay valid.
pub async fn next_slot(bank: &mut Bank) {
    let slot = bank
        .ctx
        .banks_client
        .get_sysvar::<solana_sdk::clock::Clock>()
        .await
        .unwrap()
        .slot;
    bank.ctx.warp_to_slot(slot + 1).unwrap();
}
