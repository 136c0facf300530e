//! Addresses someone touched first: lamports sent to the model or a weight address before
//! publish, a weight account created but never initialized, a model account whose cursor
//! runs past its chunks, and a transport that answers fewer statuses than asked.

use super::*;
use curta_client::{close, publish, seal, status, Error, Simulation, TxStatus};
use curta_program::state::{model_address, weight_address, WeightHeader};
use curta_tests::client::{model_rent, rent, FEE};
use curta_tests::{sha256_chain, split_sections, stories260k_artifact};
use solana_account::Account;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_message::VersionedMessage;
use solana_signature::Signature;
use solana_system_interface::instruction as system;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;

/// Lands one transaction signed by `payer` (fee payer) on the bank.
async fn send(bank: &BankTransport, payer: &Keypair, instructions: &[Instruction]) {
    let blockhash = bank.latest_blockhash().await.unwrap().0;
    let tx = Transaction::new_signed_with_payer(
        instructions,
        Some(&payer.pubkey()),
        &[payer],
        blockhash,
    );
    bank.banks_client().process_transaction(tx).await.unwrap();
}

fn lamports(account: &Option<Account>) -> u64 {
    account.as_ref().map_or(0, |a| a.lamports)
}

/// The least a fresh address can be sent: the rent-exempt minimum of an empty account (the
/// runtime refuses to leave a new account below it, so a 1-lamport transfer cannot land).
fn least_prefund() -> u64 {
    rent(0)
}

/// Publishes and seals stories260K after the bank's mint sent `prefund[i]` lamports to
/// address `i` (0 = model, 1.. = weight accounts), or, with `direct`, after the bank was made
/// to hold a system-owned empty account of that many lamports there; checks the state and
/// every lamport.
async fn publish_after_prefunding(prefund: [u64; 3], direct: bool) {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let program = curta_program::id();
    let model = model_address(&program, &authority.pubkey(), &hash).0;
    let addresses = [
        model,
        weight_address(&program, &authority.pubkey(), &model, 0),
        weight_address(&program, &authority.pubkey(), &model, 1),
    ];
    let mint = bank.mint();
    for (address, &lamports) in addresses.iter().zip(&prefund) {
        if lamports > 0 && direct {
            bank.set_account(
                address,
                Account {
                    lamports,
                    data: Vec::new(),
                    owner: solana_system_interface::program::ID,
                    executable: false,
                    rent_epoch: 0,
                },
            );
        } else if lamports > 0 {
            send(
                &bank,
                &mint,
                &[system::transfer(&mint.pubkey(), address, lamports)],
            )
            .await;
        }
    }
    let before = bank.balance(&authority.pubkey()).await.unwrap();

    let report = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(report.state, "Sealed");
    assert_eq!(report.counts.failed, 0);
    assert_eq!(report.counts.seal, total_chunks(&sections));

    // Each account holds its rent-exempt minimum, or what was sent to it when that is more.
    let minimums = [
        rent(808),
        rent(2_048 + sections[0].len()),
        rent(2_048 + sections[1].len()),
    ];
    let accounts = bank.get_accounts(&addresses).await.unwrap();
    for (i, account) in accounts.iter().enumerate() {
        let account = account.as_ref().unwrap();
        assert_eq!(account.owner, program, "account {i} owned by the program");
        assert_eq!(account.lamports, minimums[i].max(prefund[i]), "account {i}");
    }
    assert_eq!(accounts[0].as_ref().unwrap().data[9], 4, "Sealed");
    assert_eq!(&accounts[0].as_ref().unwrap().data[80..112], &hash);
    for section in 0..2 {
        let header = WeightHeader::unpack(&accounts[1 + section].as_ref().unwrap().data).unwrap();
        assert_eq!((header.model, header.section), (model, section as u16));
    }

    let held: u64 = accounts.iter().map(lamports).sum();
    let prefunded: u64 = prefund.iter().sum();
    assert_eq!(report.rent_held, held);
    assert_eq!(report.rent, held - prefunded, "rent the authority paid");
    assert_eq!(report.counts.fees, FEE * report.transactions());
    assert_eq!(before - after, held - prefunded + report.counts.fees);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefunded_model_address_below_rent() {
    publish_after_prefunding([least_prefund(), 0, 0], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefunded_model_address_above_rent() {
    publish_after_prefunding([rent(808) + 12_345, 0, 0], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefunded_weight_address_below_rent() {
    publish_after_prefunding([0, least_prefund(), 0], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefunded_weight_address_above_rent() {
    let artifact = stories260k_artifact();
    let len1 = split_sections(&artifact)[1].len();
    publish_after_prefunding([0, least_prefund(), rent(2_048 + len1) + 777], false).await;
}

/// One lamport at the model and at section 1's address: no transfer can leave a fresh account
/// that far below rent, so the bank is told to hold it (as an account from before rent rules).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_lamport_at_the_model_and_a_weight_address() {
    publish_after_prefunding([1, 0, 1], true).await;
}

/// Creates section `section`'s weight account as the program's, right size, rent-exempt,
/// without initializing it (its header stays all zero), in a transaction of its own.
async fn create_uninitialized(
    bank: &BankTransport,
    authority: &Keypair,
    model: &Pubkey,
    section: u8,
    len: usize,
) -> Pubkey {
    let program = curta_program::id();
    let address = weight_address(&program, &authority.pubkey(), model, section);
    let space = 2_048 + len;
    send(
        bank,
        authority,
        &[system::create_account_with_seed(
            &authority.pubkey(),
            &address,
            &authority.pubkey(),
            &curta_program::state::weight_seed(model, section),
            rent(space),
            space as u64,
            &program,
        )],
    )
    .await;
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_initializes_a_created_but_uninitialized_weight_account() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let (bank, authority) = bank(100 * SOL).await;
    let model = model_address(&curta_program::id(), &authority.pubkey(), &hash).0;
    let start = bank.balance(&authority.pubkey()).await.unwrap();
    let weight1 = create_uninitialized(&bank, &authority, &model, 1, sections[1].len()).await;
    let before = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(start - before, rent(2_048 + sections[1].len()) + FEE);

    let report = publish(&bank, &authority, &artifact, true, &options())
        .await
        .unwrap();
    let after = bank.balance(&authority.pubkey()).await.unwrap();
    assert_eq!(report.state, "Sealed");
    assert_eq!(report.counts.failed, 0);
    let account = bank.get_accounts(&[weight1]).await.unwrap().pop().flatten();
    let account = account.unwrap();
    assert_eq!(
        account.lamports,
        rent(2_048 + sections[1].len()),
        "not topped up"
    );
    let header = WeightHeader::unpack(&account.data).unwrap();
    assert_eq!((header.model, header.section), (model, 1));
    assert_eq!(&account.data[2_048..], sections[1].as_slice());

    // This publish paid the rent of the model and section 0 only.
    assert_eq!(report.rent, rent(808) + rent(2_048 + sections[0].len()));
    assert_eq!(report.rent_held, model_rent(&lengths(&sections)));
    assert_eq!(report.counts.fees, FEE * report.transactions());
    assert_eq!(before - after, report.rent + report.counts.fees);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_recovers_a_created_but_uninitialized_weight_account() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    let lens: Vec<u32> = sections.iter().map(|s| s.len() as u32).collect();
    let (bank, authority) = bank(100 * SOL).await;
    let program = curta_program::id();
    let model = model_address(&program, &authority.pubkey(), &hash).0;
    let start = bank.balance(&authority.pubkey()).await.unwrap();

    // By hand: the model and section 0 initialized, section 1 created but not initialized
    // (as a run interrupted between the two instructions of another client would leave it).
    let weight0 = weight_address(&program, &authority.pubkey(), &model, 0);
    let space0 = 2_048 + sections[0].len();
    send(
        &bank,
        &authority,
        &[
            curta_program::instruction::create_model(&program, &authority.pubkey(), hash, &lens),
            system::create_account_with_seed(
                &authority.pubkey(),
                &weight0,
                &authority.pubkey(),
                &curta_program::state::weight_seed(&model, 0),
                rent(space0),
                space0 as u64,
                &program,
            ),
            curta_program::instruction::init_weight_account(
                &program,
                &model,
                &weight0,
                &authority.pubkey(),
                0,
            ),
        ],
    )
    .await;
    create_uninitialized(&bank, &authority, &model, 1, sections[1].len()).await;
    let held = model_rent(&lengths(&sections));
    assert_eq!(
        start - bank.balance(&authority.pubkey()).await.unwrap(),
        held + 2 * FEE
    );

    let s = status(&bank, &model, None).await.unwrap();
    assert_eq!(s.rent_held, held);
    assert!(s.sections.iter().all(|x| x.created && !x.frozen));

    let closed = close(&bank, &authority, &model, None, &options())
        .await
        .unwrap();
    assert_eq!(closed.recovered, held);
    assert_eq!(closed.fees, FEE);
    assert_eq!(closed.accounts_closed, 3);
    assert!(
        live_accounts(&bank, &authority.pubkey(), &hash, sections.len())
            .await
            .is_empty()
    );
    assert_eq!(
        start - bank.balance(&authority.pubkey()).await.unwrap(),
        3 * FEE,
        "every lamport of rent came back; only the three fees are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_account_with_cursor_past_its_chunks_is_refused() {
    let artifact = stories260k_artifact();
    let sections = split_sections(&artifact);
    let (bank, authority) = bank(100 * SOL).await;
    let report = publish(&bank, &authority, &artifact, false, &options())
        .await
        .unwrap();
    let model = report.model;
    let account = bank.get_accounts(&[model]).await.unwrap().pop().flatten();
    let account = account.unwrap();
    let total = total_chunks(&sections) as u32;
    assert_eq!(account.data[116..120], total.to_le_bytes());

    let tamper = |offset: usize, value: u32| {
        let mut a = account.clone();
        a.data[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
        bank.set_account(&model, a);
    };
    let balance = bank.balance(&authority.pubkey()).await.unwrap();
    let cursor_problem = format!(
        "seal cursor is {}, expected at most the total chunks {total}",
        total + 5
    );
    tamper(112, total + 5);
    for result in [
        seal(&bank, &authority, &model, None, &options())
            .await
            .map(|_| ()),
        publish(&bank, &authority, &artifact, true, &options())
            .await
            .map(|_| ()),
        status(&bank, &model, None).await.map(|_| ()),
    ] {
        match result {
            Err(Error::BadModel { address, problem }) => {
                assert_eq!(
                    (address, problem.as_str()),
                    (model, cursor_problem.as_str())
                )
            }
            other => panic!("expected BadModel, got {other:?}"),
        }
    }

    tamper(116, total + 1);
    let lens: Vec<usize> = lengths(&sections);
    match seal(&bank, &authority, &model, None, &options()).await {
        Err(Error::BadModel { address, problem }) => assert_eq!(
            (address, problem),
            (
                model,
                format!(
                    "total chunks is {}, expected {total} from the section lengths {lens:?}",
                    total + 1
                )
            )
        ),
        other => panic!("expected BadModel, got {other:?}"),
    }
    assert_eq!(bank.balance(&authority.pubkey()).await.unwrap(), balance);
}

/// The bank, answering one status fewer than it is asked for.
struct ShortStatuses<'a>(&'a BankTransport);

impl Transport for ShortStatuses<'_> {
    fn describe(&self) -> String {
        "short".into()
    }
    fn profile(&self) -> curta_client::Profile {
        self.0.profile()
    }
    fn program_id(&self) -> Pubkey {
        self.0.program_id()
    }
    async fn get_accounts(&self, a: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.0.get_accounts(a).await
    }
    async fn balance(&self, a: &Pubkey) -> Result<u64, Error> {
        self.0.balance(a).await
    }
    async fn rent_minimum(&self, len: usize) -> Result<u64, Error> {
        self.0.rent_minimum(len).await
    }
    async fn fee_for_message(&self, m: &VersionedMessage) -> Result<u64, Error> {
        self.0.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.0.latest_blockhash().await
    }
    async fn blockhash_expired(&self, h: &Hash, last_valid: u64) -> Result<bool, Error> {
        self.0.blockhash_expired(h, last_valid).await
    }
    async fn send(&self, txs: &[VersionedTransaction]) -> Result<(), Error> {
        self.0.send(txs).await
    }
    async fn statuses(&self, s: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        let mut statuses = self.0.statuses(s).await?;
        statuses.pop();
        Ok(statuses)
    }
    async fn finalized(&self, s: &[Signature]) -> Result<Vec<bool>, Error> {
        self.0.finalized(s).await
    }
    fn ledger(&self) -> &curta_client::Ledger {
        self.0.ledger()
    }
    async fn simulate(&self, tx: &VersionedTransaction) -> Result<Simulation, Error> {
        self.0.simulate(tx).await
    }
    async fn pass_slot(&self, slot: u64) -> Result<(), curta_client::Error> {
        self.0.pass_slot(slot).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_statuses_than_signatures_is_an_error() {
    let artifact = stories260k_artifact();
    let (bank, authority) = bank(100 * SOL).await;
    // The first run sends the one create transaction and asks for its status.
    match publish(
        &ShortStatuses(&bank),
        &authority,
        &artifact,
        true,
        &options(),
    )
    .await
    {
        Err(Error::Transport(message)) => assert_eq!(
            message,
            "short returned 0 signature statuses for 1 signatures"
        ),
        other => panic!("expected a transport error, got {other:?}"),
    }
}
