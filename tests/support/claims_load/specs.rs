//! Which claims the load opens ([`specs`]): claim `i` is claimer `i mod claimers`'s, at nonce
//! `i div claimers`; greedy, drawn or chosen in turn; its prompt one of seven (texts and ids);
//! and one claim in about every `100 / wrong-percent` is answered wrongly, each in the next of
//! the [`Forgery`] kinds.

use curta_client::claim::ClaimRequest;
use curta_client::run::Prompt;
use curta_client::TxVersion;
use curta_core::infer::Settings;
use curta_interface::run::SeedSource;

/// The sampled claims' temperature (0.8) and top-p (0.9), 16 fractional bits.
pub const TEMPERATURE: u32 = 52_429;
pub const TOP_P: u32 = 58_982;

/// How a claim's seed comes about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Temperature 0: no seed.
    Greedy,
    /// Sampled, the seed drawn at AnswerClaim from the open slot's hash.
    Drawn,
    /// Sampled with the claimer's seed.
    Chosen,
}

/// How a wrong answer is wrong: what its claimer posted instead of the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Forgery {
    /// One generated id changed, the text kept.
    IdChanged,
    /// One byte of the text changed, the ids kept.
    TextChanged,
    /// The answer computed with another seed (a drawn claim: the claimer's own seed, not the
    /// drawn one; a chosen claim: another seed).
    WrongSeed,
    /// The answer computed for another prompt (a word or an id more).
    WrongPrompt,
    /// The answer one token short.
    Truncated,
    /// The answer computed at another temperature (greedy for a sampled claim, sampled for a
    /// greedy one).
    WrongTemperature,
}

impl Forgery {
    pub const ALL: [Forgery; 6] = [
        Forgery::IdChanged,
        Forgery::TextChanged,
        Forgery::WrongSeed,
        Forgery::WrongPrompt,
        Forgery::Truncated,
        Forgery::WrongTemperature,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Forgery::IdChanged => "id changed",
            Forgery::TextChanged => "text changed",
            Forgery::WrongSeed => "wrong seed",
            Forgery::WrongPrompt => "wrong prompt",
            Forgery::Truncated => "one token short",
            Forgery::WrongTemperature => "wrong temperature",
        }
    }
}

/// One claim of the load.
#[derive(Clone, Debug)]
pub struct ClaimSpec {
    pub index: usize,
    pub claimer: usize,
    pub nonce: u32,
    pub mode: Mode,
    pub prompt: Prompt,
    /// The seed OpenClaim carries (0 for a greedy claim).
    pub claimer_seed: u64,
    /// How its answer is wrong (None: it is answered honestly).
    pub wrong: Option<Forgery>,
}

/// The prompts the claims cycle through: texts and ids (ids of stories260K's 512-token
/// vocabulary).
pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::Text(b"Once upon a time".to_vec()),
        Prompt::Tokens(vec![1]),
        Prompt::Text(b"Lily and Tom went to the park.".to_vec()),
        Prompt::Tokens(vec![1, 306]),
        Prompt::Text(b"The little dog was sad".to_vec()),
        Prompt::Tokens(vec![1, 400, 263, 471]),
        Prompt::Text(b"One day".to_vec()),
    ]
}

/// SplitMix64 of `i`, never 0: a claimer's seed.
fn seed_of(i: usize) -> u64 {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// The wrong claims' count: `wrong_percent` of `claims`, rounded.
pub fn wrong_count(claims: usize, wrong_percent: f64) -> usize {
    ((claims as f64 * wrong_percent / 100.0).round() as usize).min(claims)
}

/// The load's claims.
pub fn specs(claims: usize, claimers: usize, wrong_percent: f64) -> Vec<ClaimSpec> {
    let prompts = prompts();
    let claimers = claimers.max(1);
    let mut specs: Vec<ClaimSpec> = (0..claims)
        .map(|i| {
            let mode = [Mode::Greedy, Mode::Drawn, Mode::Chosen][i % 3];
            ClaimSpec {
                index: i,
                claimer: i % claimers,
                nonce: (i / claimers) as u32,
                mode,
                prompt: prompts[(i / 3) % prompts.len()].clone(),
                claimer_seed: if mode == Mode::Greedy { 0 } else { seed_of(i) },
                wrong: None,
            }
        })
        .collect();
    let wrong = wrong_count(claims, wrong_percent);
    for j in 0..wrong {
        // Spread evenly: the middle of each of `wrong` equal stretches.
        let i = (2 * j + 1) * claims / (2 * wrong);
        let forgery = Forgery::ALL[j % Forgery::ALL.len()];
        let spec = &mut specs[i];
        if forgery == Forgery::WrongSeed && spec.mode == Mode::Greedy {
            // A greedy claim has no seed to get wrong.
            spec.mode = if j % 2 == 0 {
                Mode::Drawn
            } else {
                Mode::Chosen
            };
            spec.claimer_seed = seed_of(i);
        }
        spec.wrong = Some(forgery);
    }
    specs
}

impl ClaimSpec {
    /// The claim's settings, the claimer's seed among them.
    pub fn settings(&self) -> Settings {
        match self.mode {
            Mode::Greedy => Settings::greedy(),
            Mode::Drawn | Mode::Chosen => Settings {
                temperature: TEMPERATURE,
                top_p: TOP_P,
                seed: self.claimer_seed,
            },
        }
    }

    pub fn source(&self) -> SeedSource {
        match self.mode {
            Mode::Greedy => SeedSource::None,
            Mode::Drawn => SeedSource::Drawn,
            Mode::Chosen => SeedSource::Chosen,
        }
    }

    /// What `client claim` would be given for it (its nonce fixed, not waiting).
    pub fn request(&self, steps: u32, window: u32, tx_version: TxVersion) -> ClaimRequest {
        let mut request = ClaimRequest::new(self.prompt.clone(), Some(steps), self.settings());
        request.source = self.source();
        request.window = window;
        request.nonce = Some(self.nonce);
        request.wait = false;
        request.tx_version = tx_version;
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrong_claims_are_spread_and_every_kind_is_used() {
        let specs = specs(1000, 4, 10.0);
        let wrong: Vec<&ClaimSpec> = specs.iter().filter(|s| s.wrong.is_some()).collect();
        assert_eq!(wrong.len(), 100);
        for kind in Forgery::ALL {
            assert!(wrong.iter().filter(|s| s.wrong == Some(kind)).count() >= 16);
        }
        assert!(wrong
            .iter()
            .filter(|s| s.wrong == Some(Forgery::WrongSeed))
            .all(|s| s.mode != Mode::Greedy));
        let small = super::specs(40, 4, 10.0);
        assert_eq!(small.iter().filter(|s| s.wrong.is_some()).count(), 4);
    }
}
