//! The store on the shodh-memory engine, and everything computed on it: the [`store::Store`]
//! itself, embedding ([`embed`]), ranking ([`rank`]) and recall ([`recall`]), dedup, the files a
//! memory names ([`anchors`]), enrichment, snapshots, export/import ([`exchange`]), migrations,
//! the legacy store's reader and todos. [`engine_env`] sets up a process to own a store.

pub mod anchors;
pub mod dedup;
pub mod embed;
pub mod engine_env;
pub mod enrich;
pub mod exchange;
pub mod legacy_store;
pub mod migrate;
pub mod rank;
pub mod recall;
pub mod record;
pub mod snapshot;
pub mod store;
pub mod todo;
pub mod trust;
