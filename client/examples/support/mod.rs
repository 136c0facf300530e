//! What the benchmarks share: a transport that records what landed, and the models.

use curta_client::{Error, Profile, Simulation, Transport, TxStatus};
use curta_core::convert::synth;
use curta_core::Config;
use solana_account::Account;
use solana_hash::Hash;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::Transaction;
use std::collections::HashMap;
use std::sync::Mutex;

/// Records the message of every transaction that landed successfully, in landing order.
pub struct Recording<'a, T: Transport> {
    pub inner: &'a T,
    sent: Mutex<HashMap<Signature, Message>>,
    pub landed: Mutex<Vec<Message>>,
}

impl<'a, T: Transport> Recording<'a, T> {
    pub fn new(inner: &'a T) -> Self {
        Recording {
            inner,
            sent: Mutex::new(HashMap::new()),
            landed: Mutex::new(Vec::new()),
        }
    }
}

impl<T: Transport> Transport for Recording<'_, T> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn profile(&self) -> Profile {
        self.inner.profile()
    }
    fn program_id(&self) -> Pubkey {
        self.inner.program_id()
    }
    async fn get_accounts(&self, a: &[Pubkey]) -> Result<Vec<Option<Account>>, Error> {
        self.inner.get_accounts(a).await
    }
    async fn balance(&self, a: &Pubkey) -> Result<u64, Error> {
        self.inner.balance(a).await
    }
    async fn rent_minimum(&self, l: usize) -> Result<u64, Error> {
        self.inner.rent_minimum(l).await
    }
    async fn fee_for_message(&self, m: &Message) -> Result<u64, Error> {
        self.inner.fee_for_message(m).await
    }
    async fn latest_blockhash(&self) -> Result<(Hash, u64), Error> {
        self.inner.latest_blockhash().await
    }
    async fn blockhash_expired(&self, h: &Hash, l: u64) -> Result<bool, Error> {
        self.inner.blockhash_expired(h, l).await
    }
    async fn send(&self, txs: &[Transaction]) -> Result<(), Error> {
        {
            let mut sent = self.sent.lock().unwrap();
            for tx in txs {
                sent.insert(tx.signatures[0], tx.message.clone());
            }
        }
        self.inner.send(txs).await
    }
    async fn statuses(&self, s: &[Signature]) -> Result<Vec<TxStatus>, Error> {
        let statuses = self.inner.statuses(s).await?;
        let mut sent = self.sent.lock().unwrap();
        for (sig, status) in s.iter().zip(&statuses) {
            if status == &TxStatus::Landed(Ok(())) {
                if let Some(message) = sent.remove(sig) {
                    self.landed.lock().unwrap().push(message);
                }
            }
        }
        Ok(statuses)
    }
    async fn simulate(&self, tx: &Transaction) -> Result<Simulation, Error> {
        self.inner.simulate(tx).await
    }
}

/// Whether a landed message is one Curta Write (tag 2) of `program`: the bare loops stream
/// stretches of these, and send everything else one at a time.
pub fn is_write(program: &Pubkey, m: &Message) -> bool {
    m.instructions.len() == 1
        && m.account_keys[m.instructions[0].program_id_index as usize] == *program
        && m.instructions[0].data.first() == Some(&2)
}

/// The benchmark models: the bundled stories260K, a ~1.7 MB grouped-query model, and a
/// stories15M-shaped one (16.5 MB, 8 sections), synthetic from fixed seeds.
pub fn model(name: &str) -> Vec<u8> {
    let (config, tied) = match name {
        "stories260K" => {
            return curta_core::convert::convert(
                curta_client::rehearse::STORIES260K,
                curta_client::rehearse::TOK512,
            )
            .unwrap()
        }
        "gqa" => (
            Config {
                dim: 192,
                hidden_dim: 512,
                layers: 3,
                heads: 6,
                kv_heads: 2,
                vocab_size: 2048,
                context_length: 256,
            },
            true,
        ),
        "stories15M" => (synth::STORIES15M, true),
        other => panic!("unknown model {other}"),
    };
    let checkpoint = synth::checkpoint(&config, tied, 42);
    let tokenizer = synth::tokenizer(config.vocab_size, 43);
    curta_core::convert::convert(&checkpoint, &tokenizer).unwrap()
}
