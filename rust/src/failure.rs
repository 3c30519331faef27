//! Why a trainer binary stopped: the one error type of the trainer's modes, its exit code
//! chosen by the command line (cli.rs).

/// Why a binary stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Refused before any training step (a port that does not fit its spec, a spec for
    /// another binary): exit code 2.
    Refused(String),
    /// Any other error: exit code 1.
    Failed(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Failure {
        Failure::Failed(e)
    }
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Refused(e) | Failure::Failed(e) => e,
        }
    }

    /// The one line, refused or failed.
    pub fn into_message(self) -> String {
        match self {
            Failure::Refused(e) | Failure::Failed(e) => e,
        }
    }
}
