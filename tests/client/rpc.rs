//! The client library over RPC: `RpcTransport` (solana-client's nonblocking RpcClient, HTTP
//! and JSON) against the JSON-RPC node of tests/support/rpc_shim.rs, which runs the real
//! program on a bank. Expected values come from the bank directly and the spec's numbers.

use super::*;
use curta_client::{close, publish, seal, status, verify, Error, RpcTransport, TxStatus};
use curta_tests::client::{model_rent, FEE};
use curta_tests::rpc_shim::{Misbehave, RpcShim};
use curta_tests::{sha256_chain, stories260k_artifact, tiny_sections};
use solana_account::Account;
use solana_commitment_config::CommitmentConfig;
use solana_hash::Hash;
use solana_message::VersionedMessage;
use solana_signature::Signature;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction::Transaction;
use std::time::Instant;

/// The sections of an artifact as curta-core decodes them, and the weights hash of the
/// artifact computed from them with the sha2 crate.
fn sections_and_hash(artifact: &[u8]) -> (Vec<Vec<u8>>, [u8; 32]) {
    let decoded = curta_core::decode(artifact).expect("the test artifact decodes");
    let sections: Vec<Vec<u8>> = decoded.sections().map(<[u8]>::to_vec).collect();
    let hash = sha256_chain(sections.iter().map(Vec::as_slice));
    (sections, hash)
}

/// The model and weight accounts of `model` that exist on the bank, with their lamports.
async fn accounts_on_bank(
    shim: &RpcShim,
    authority: &Pubkey,
    model: &Pubkey,
    sections: usize,
) -> Vec<(Pubkey, u64)> {
    let program = curta_program::id();
    let mut addresses = vec![*model];
    addresses.extend(
        (0..sections)
            .map(|i| curta_program::state::weight_address(&program, authority, model, i as u8)),
    );
    let banks = shim.banks();
    let mut live = Vec::new();
    for address in addresses {
        if let Some(account) = banks.get_account(address).await.unwrap() {
            live.push((address, account.lamports));
        }
    }
    live
}

async fn balance_on_bank(shim: &RpcShim, address: &Pubkey) -> u64 {
    shim.banks().get_balance(*address).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_publish_then_seal_stories260k_with_exact_lamports() {
    let started = Instant::now();
    let artifact = stories260k_artifact();
    let (sections, hash) = sections_and_hash(&artifact);
    let authority = Keypair::new();
    let shim = RpcShim::start(&[(authority.pubkey(), 100 * SOL)]).await;
    // Finalized: the node reports every landing "processed", then "confirmed", before it
    // counts; the transport must hold both as pending.
    let rpc = RpcTransport::new(&shim.url(), CommitmentConfig::finalized());
    // A priority fee: every transaction carries a measured compute-unit limit, so the first
    // of each kind is simulated (simulateTransaction) and every fee exceeds 5,000 lamports.
    let priced = Options {
        compute_unit_price: Some(1_000),
        ..Options::default()
    };
    let before = balance_on_bank(&shim, &authority.pubkey()).await;
    assert_eq!(before, 100 * SOL);

    let published = publish(&rpc, &authority, &artifact, false, &priced)
        .await
        .unwrap();
    assert_eq!(published.cluster, shim.url());
    assert_eq!(published.state, "Open");
    assert_eq!(published.weights_hash, hash);
    assert_eq!(published.counts.seal, 0);
    assert_eq!(published.counts.failed, 0);

    let open = status(&rpc, &published.model, Some(&artifact))
        .await
        .unwrap();
    assert_eq!(open.state, "Open");
    assert_eq!(open.cluster, shim.url());
    assert_eq!(open.authority, authority.pubkey());
    assert_eq!(open.weights_hash, hash);
    assert_eq!(open.seal_cursor, 0);
    assert_eq!(open.total_chunks as u64, total_chunks(&sections));
    assert_eq!(open.rent_held, model_rent(&lengths(&sections)));
    for (s, section) in open.sections.iter().zip(&sections) {
        assert!(s.created && !s.frozen);
        assert_eq!(s.length as usize, section.len());
        assert_eq!(s.differing_bytes, Some(0), "section {} over RPC", s.index);
    }

    let sealed = seal(&rpc, &authority, &published.model, None, &priced)
        .await
        .unwrap();
    assert_eq!(sealed.state, "Sealed");
    assert_eq!(sealed.counts.seal, total_chunks(&sections));
    assert_eq!(sealed.counts.failed, 0);
    assert_eq!(sealed.counts.resigned, 0, "the node drops nothing");

    // The model as the bank holds it (read around RPC): Sealed, to the independent hash.
    let model = shim
        .banks()
        .get_account(published.model)
        .await
        .unwrap()
        .expect("model account");
    assert_eq!(model.data[9], 4, "model state byte is Sealed");
    assert_eq!(&model.data[48..80], &hash, "declared hash");
    assert_eq!(&model.data[80..112], &hash, "running hash");

    // Exact lamports: what left the payer is the rent the accounts hold plus the fees the
    // bank charges for the transactions it executed; the client counted the same.
    let after = balance_on_bank(&shim, &authority.pubkey()).await;
    let executed = shim.executed();
    assert!(executed.iter().all(|e| e.err.is_none()), "all succeeded");
    assert_eq!(
        executed.len() as u64,
        published.transactions() + sealed.transactions()
    );
    assert_eq!(shim.dropped(), 0);
    let fees = shim.fees_charged(&authority.pubkey()).await;
    assert!(
        fees > FEE * executed.len() as u64,
        "a priority fee on top of 5,000 lamports a signature"
    );
    let held: u64 = accounts_on_bank(&shim, &authority.pubkey(), &published.model, 2)
        .await
        .iter()
        .map(|(_, lamports)| lamports)
        .sum();
    assert_eq!(held, model_rent(&lengths(&sections)));
    assert_eq!(before - after, held + fees);
    assert_eq!(published.counts.fees + sealed.counts.fees, fees);
    assert_eq!(published.rent + sealed.rent, held);
    assert_eq!(
        (published.balance_before, sealed.balance_after),
        (before, after)
    );

    let s = status(&rpc, &published.model, None).await.unwrap();
    assert_eq!(s.state, "Sealed");
    assert_eq!(s.running_hash, hash);
    assert_eq!(s.rent_held, held);
    let v = verify(&rpc, &published.model, &artifact).await.unwrap();
    assert!(v.ok(), "{}", v.to_text());
    assert_eq!(v.onchain_hash, Some(hash));

    // A sealed model is permanent: close refuses before sending anything.
    let err = close(&rpc, &authority, &published.model, None, &priced)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Sealed { model, .. } if model == published.model),
        "{err}"
    );
    assert_eq!(shim.executed().len(), executed.len());
    assert_eq!(balance_on_bank(&shim, &authority.pubkey()).await, after);

    // Every transaction was polled through all three levels, and not one poll further.
    for e in &executed {
        let reported = shim.reported(&e.transaction.signatures[0]);
        assert_eq!(reported, ["processed", "confirmed", "finalized"]);
    }

    // Everything went through the RPC methods a validator serves.
    let calls = shim.calls();
    for method in [
        "getBalance",
        "getFeeForMessage",
        "getLatestBlockhash",
        "getMinimumBalanceForRentExemption",
        "getMultipleAccounts",
        "getSignatureStatuses",
        "sendTransaction",
        "simulateTransaction",
    ] {
        assert!(
            calls.contains_key(method),
            "{method} never called: {calls:?}"
        );
    }
    assert_eq!(calls["sendTransaction"], executed.len() as u64);
    eprintln!(
        "rpc publish + seal of stories260K: {} transactions in {:.1} s; calls {calls:?}",
        executed.len(),
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_publish_status_close_recovers_all_rent() {
    // The hand-built artifact (its section one of 70,000 random bytes spans two chunks).
    let tiny = tiny_sections(70_000, 7);
    let artifact = tiny.concat();
    let (sections, hash) = sections_and_hash(&artifact);
    assert_eq!(sections, tiny);
    let authority = Keypair::new();
    let shim = RpcShim::start(&[(authority.pubkey(), 10 * SOL)]).await;
    let rpc = RpcTransport::new(&shim.url(), CommitmentConfig::confirmed());
    let before = balance_on_bank(&shim, &authority.pubkey()).await;

    let published = publish(&rpc, &authority, &artifact, false, &options())
        .await
        .unwrap();
    assert_eq!(published.state, "Open");
    assert_eq!(published.weights_hash, hash);
    let rent = model_rent(&lengths(&sections));
    assert_eq!(published.rent, rent);

    let s = status(&rpc, &published.model, Some(&artifact))
        .await
        .unwrap();
    assert_eq!(s.state, "Open");
    assert_eq!(s.rent_held, rent);
    assert!(s.sections.iter().all(|x| x.differing_bytes == Some(0)));

    let closed = close(&rpc, &authority, &published.model, None, &options())
        .await
        .unwrap();
    assert_eq!(closed.recovered, rent);
    assert_eq!(closed.fees, FEE);
    assert_eq!(closed.accounts_closed, 1 + sections.len());
    assert!(
        accounts_on_bank(&shim, &authority.pubkey(), &published.model, sections.len())
            .await
            .is_empty(),
        "model and weight accounts are gone from the bank"
    );

    // At "confirmed", a transaction counts once confirmed: the Close was polled exactly
    // twice. Before sending it the client waited until everything it had sent was final:
    // the publish's transactions were polled on to "finalized", and not once further.
    let program = curta_program::id();
    let (closes, others): (Vec<_>, Vec<_>) = shim.executed().into_iter().partition(|e| {
        let message = &e.transaction.message;
        message.instructions().last().is_some_and(|ix| {
            message.static_account_keys()[ix.program_id_index as usize] == program
                && ix.data.first() == Some(&5)
        })
    });
    assert_eq!(closes.len(), 1);
    assert_eq!(
        shim.reported(&closes[0].transaction.signatures[0]),
        ["processed", "confirmed"]
    );
    assert!(!others.is_empty());
    for e in &others {
        let reported = shim.reported(&e.transaction.signatures[0]);
        assert_eq!(reported, ["processed", "confirmed", "finalized"]);
    }

    // Only fees are lost, 5,000 lamports per executed transaction, as the bank charges.
    let after = balance_on_bank(&shim, &authority.pubkey()).await;
    let executed = shim.executed();
    assert_eq!(executed.len() as u64, published.transactions() + 1);
    assert_eq!(
        shim.fees_charged(&authority.pubkey()).await,
        FEE * executed.len() as u64
    );
    assert_eq!(before - after, FEE * executed.len() as u64);
    assert_eq!(shim.dropped(), 0);

    // The model is gone: status over RPC says so, naming it.
    let err = status(&rpc, &published.model, None).await.unwrap_err();
    assert!(
        matches!(err, Error::ModelNotFound(m) if m == published.model),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_endpoint_that_is_not_listening_is_a_transport_error_naming_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let rpc = RpcTransport::new(&url, CommitmentConfig::confirmed());
    let model = Pubkey::new_unique();
    let err = status(&rpc, &model, None).await.unwrap_err();
    let Error::Transport(message) = &err else {
        panic!("expected a transport error, found {err:?}");
    };
    assert!(message.starts_with("RPC: "), "{message}");
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
}

/// A signed transfer of `lamports` from `from` with `blockhash`.
fn transfer(from: &Keypair, to: &Pubkey, lamports: u64, blockhash: Hash) -> VersionedTransaction {
    Transaction::new_signed_with_payer(
        &[solana_system_interface::instruction::transfer(
            &from.pubkey(),
            to,
            lamports,
        )],
        Some(&from.pubkey()),
        &[from],
        blockhash,
    )
    .into()
}

/// Polls until every signature has landed (at the transport's commitment).
async fn landed(rpc: &RpcTransport, signatures: &[Signature]) -> Vec<TxStatus> {
    for _ in 0..200 {
        let statuses = rpc.statuses(signatures).await.unwrap();
        if statuses.iter().all(|s| matches!(s, TxStatus::Landed(_))) {
            return statuses;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("not landed: {signatures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_transport_methods_answer_as_the_bank_does() {
    let authority = Keypair::new();
    // A 10 MiB account (the largest a weight account can be) of seeded random bytes, which
    // zstd cannot shrink: the biggest getMultipleAccounts answer the client can meet.
    let big = Pubkey::new_unique();
    let big_account = Account {
        lamports: 1,
        data: curta_tests::Rng::new(3).bytes(10 * 1024 * 1024),
        owner: curta_program::id(),
        executable: false,
        rent_epoch: 0,
    };
    let shim = RpcShim::start_with_accounts(&[
        (
            authority.pubkey(),
            Account::new(10 * SOL, 0, &solana_system_interface::program::ID),
        ),
        (big, big_account.clone()),
    ])
    .await;
    let banks = shim.banks();
    let rpc = RpcTransport::new(&shim.url(), CommitmentConfig::processed());
    assert_eq!(rpc.describe(), shim.url());

    // Accounts in the order asked, 4 to a request, absent ones None, bytes exact.
    let missing = Pubkey::new_unique();
    let addresses = [
        missing,
        authority.pubkey(),
        solana_sdk::sysvar::rent::ID,
        big,
        shim.mint().pubkey(),
        curta_program::id(),
        missing,
        authority.pubkey(),
        Pubkey::new_unique(),
    ];
    let calls_before = shim
        .calls()
        .get("getMultipleAccounts")
        .copied()
        .unwrap_or(0);
    let accounts = rpc.get_accounts(&addresses).await.unwrap();
    assert_eq!(shim.calls()["getMultipleAccounts"] - calls_before, 3);
    assert_eq!(accounts.len(), addresses.len());
    for (address, account) in addresses.iter().zip(&accounts) {
        assert_eq!(
            account,
            &banks.get_account(*address).await.unwrap(),
            "{address}"
        );
    }
    assert_eq!(accounts[0], None);
    assert_eq!(accounts[3].as_ref(), Some(&big_account));

    assert_eq!(rpc.balance(&authority.pubkey()).await.unwrap(), 10 * SOL);
    assert_eq!(rpc.balance(&missing).await.unwrap(), 0);
    let rent = banks.get_rent().await.unwrap();
    for len in [0, 808, 10 * 1024 * 1024] {
        assert_eq!(
            rpc.rent_minimum(len).await.unwrap(),
            rent.minimum_balance(len)
        );
    }
    assert_eq!(
        rpc.rent_minimum(808).await.unwrap(),
        curta_tests::client::rent(808)
    );

    // The blockhash and its expiry, against the bank's block height.
    let (blockhash, last_valid) = rpc.latest_blockhash().await.unwrap();
    assert_eq!(
        Some((blockhash, last_valid)),
        banks
            .get_latest_blockhash_with_commitment(
                solana_commitment_config::CommitmentLevel::Processed
            )
            .await
            .unwrap()
    );
    let height = banks.get_root_block_height().await.unwrap();
    assert!(!rpc.blockhash_expired(&blockhash, last_valid).await.unwrap());
    assert!(!rpc.blockhash_expired(&blockhash, height).await.unwrap());
    assert!(rpc.blockhash_expired(&blockhash, height - 1).await.unwrap());

    // Fees: 5,000 lamports a signature, as the bank says; an unknown blockhash has none.
    let to = Pubkey::new_unique();
    let message = transfer(&authority, &to, 1, blockhash).message;
    assert_eq!(rpc.fee_for_message(&message).await.unwrap(), FEE);
    let VersionedMessage::Legacy(legacy) = &message else {
        panic!("a legacy transfer")
    };
    assert_eq!(
        banks.get_fee_for_message(legacy.clone()).await.unwrap(),
        Some(FEE)
    );
    let mut unknown = message.clone();
    unknown.set_recent_blockhash(Hash::new_unique());
    let err = rpc.fee_for_message(&unknown).await.unwrap_err();
    assert!(
        matches!(&err, Error::Transport(m) if m.contains("Invalid blockhash")),
        "{err}"
    );

    // Simulation: the bank's result, units and logs, success and failure.
    let ok = transfer(&authority, &to, 1_000_000, blockhash);
    let too_much = transfer(&authority, &to, 11 * SOL, blockhash);
    let mut simulated = Vec::new();
    for tx in [&ok, &too_much] {
        let over_rpc = rpc.simulate(tx).await.unwrap();
        let on_bank = banks.simulate_transaction(tx.clone()).await.unwrap();
        let details = on_bank.simulation_details.unwrap();
        assert_eq!(Some(&over_rpc.result), on_bank.result.as_ref());
        assert_eq!(over_rpc.units, details.units_consumed);
        assert_eq!(over_rpc.logs, details.logs);
        assert!(over_rpc.units > 0);
        simulated.push(over_rpc.result);
    }
    assert_eq!(simulated[0], Ok(()));
    assert!(simulated[1].is_err());

    // Send and statuses: landed results as executed, unknown signatures Unknown, in order,
    // over more than one request of 256.
    rpc.send(&[ok.clone(), too_much.clone()]).await.unwrap();
    let sent = [ok.signatures[0], too_much.signatures[0]];
    let results = landed(&rpc, &sent).await;
    assert_eq!(results[0], TxStatus::Landed(Ok(())));
    assert_eq!(results[1], TxStatus::Landed(simulated[1].clone()));
    let mut many: Vec<Signature> = (0..300).map(|_| Signature::new_unique()).collect();
    many[7] = sent[0];
    many[299] = sent[1];
    let statuses = rpc.statuses(&many).await.unwrap();
    assert_eq!(statuses.len(), 300);
    for (i, status) in statuses.iter().enumerate() {
        match i {
            7 => assert_eq!(status, &results[0]),
            299 => assert_eq!(status, &results[1]),
            _ => assert_eq!(status, &TxStatus::Unknown, "{i}"),
        }
    }
    assert_eq!(banks.get_balance(to).await.unwrap(), 1_000_000);
    assert_eq!(
        banks.get_balance(authority.pubkey()).await.unwrap(),
        10 * SOL - 1_000_000 - 2 * FEE,
        "the failed transfer paid its fee too"
    );

    // A transaction the node refuses as malformed (1,300 bytes: over the packet size) is an
    // error at once, naming it; the good one sent with it still lands.
    let (blockhash, _) = rpc.latest_blockhash().await.unwrap();
    let good = transfer(&authority, &to, 2, blockhash);
    let oversize = VersionedTransaction::from(Transaction::new_signed_with_payer(
        &[solana_instruction::Instruction::new_with_bytes(
            curta_program::id(),
            &[0u8; 1_300],
            vec![],
        )],
        Some(&authority.pubkey()),
        &[&authority],
        blockhash,
    ));
    let err = rpc
        .send(&[good.clone(), oversize.clone()])
        .await
        .unwrap_err();
    let Error::Transport(message) = &err else {
        panic!("{err:?}");
    };
    assert!(
        message.contains(&format!(
            "sendTransaction refused transaction {}",
            oversize.signatures[0]
        )) && message.contains("too large"),
        "{message}"
    );
    assert_eq!(
        landed(&rpc, &[good.signatures[0]]).await,
        [TxStatus::Landed(Ok(()))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_node_answering_out_of_shape_is_an_error_not_a_panic() {
    let authority = Keypair::new();
    let shim = RpcShim::start(&[(authority.pubkey(), SOL)]).await;
    let rpc = RpcTransport::new(&shim.url(), CommitmentConfig::processed());

    // Account data in an encoding that was not asked for: an error naming the account.
    shim.misbehave(Misbehave::AccountsAsJson);
    let err = rpc.get_accounts(&[authority.pubkey()]).await.unwrap_err();
    assert!(
        matches!(&err, Error::Transport(m)
            if m.contains(&format!("account {}: data or owner not decodable", authority.pubkey()))),
        "{err}"
    );
    let err = status(&rpc, &authority.pubkey(), None).await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err}");

    // Fewer statuses than signatures: an error, not a silently shortened list.
    shim.misbehave(Misbehave::ShortStatuses);
    let err = rpc
        .statuses(&[Signature::new_unique(), Signature::new_unique()])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Transport(m)
            if m == "RPC: getSignatureStatuses answered 1 values for 2 requested"),
        "{err}"
    );

    shim.misbehave(Misbehave::No);
    assert_eq!(
        rpc.get_accounts(&[authority.pubkey()]).await.unwrap()[0]
            .as_ref()
            .unwrap()
            .lamports,
        SOL
    );
}
