//! The executor abstraction: something that computes batches of pages.
//!
//! The scheduler only needs "compute these pages, blocking"; whether that runs
//! as a wgpu compute shader or as the CPU reference is decided once, at
//! startup, by [`crate::select_executor`], and recorded in [`ExecutorInfo`] so
//! every report says what actually ran the pages.

use crate::page::PageSpec;
use serde::{Deserialize, Serialize};

pub use crate::error::ExecError;

/// A device that computes pages. Shared by every worker of a pool.
pub trait PageExecutor: Send + Sync + 'static {
    /// What this executor is (shown in reports).
    fn info(&self) -> &ExecutorInfo;
    /// Blocking: computes every page of the batch (one GPU submission for the batch where possible).
    ///
    /// Returns one result per page, in the order of `pages`.
    fn compute(&self, pages: &[PageSpec]) -> Result<Vec<u32>, ExecError>;
}

/// Which implementation runs pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    /// A wgpu compute shader on a GPU adapter (possibly a software one such as lavapipe).
    Wgpu,
    /// The CPU reference implementation.
    Cpu,
}

/// Description of an executor, for reports and logs.
#[derive(Clone, Debug, Serialize)]
pub struct ExecutorInfo {
    pub kind: ExecutorKind,
    /// Adapter description, e.g. "llvmpipe (LLVM 15.0.6, 256 bits), Vulkan, Cpu",
    /// or "CPU reference (no GPU adapter)" for the CPU executor.
    pub adapter: String,
    /// True when `Auto` wanted a GPU but fell back to the CPU.
    pub fallback: bool,
    /// Why the fallback happened.
    pub fallback_reason: Option<String>,
}

/// Which executor the configuration asks for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorChoice {
    /// wgpu when an adapter exists, else the CPU reference with a loud warning.
    #[default]
    Auto,
    /// wgpu or an error.
    Wgpu,
    /// The CPU reference, deliberately.
    Cpu,
}
