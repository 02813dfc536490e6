//! The shared GPU of the system under test.
//!
//! Workers of a document-extraction pool split documents into pages and submit
//! them to one [`GpuScheduler`], which batches pages by a scheduling policy and
//! runs every batch for real on a [`PageExecutor`]: a wgpu compute shader when a
//! GPU adapter exists (lavapipe counts), else the bit-exact CPU reference.
//! Batch time is paced to a configured model so capacity is the same on any
//! machine; see README.md.

pub mod calibrate;
pub mod cpu;
pub mod error;
pub mod executor;
pub mod page;
mod runtime_dir;
pub mod scheduler;
pub mod select;
pub mod wgpu_exec;

pub use calibrate::{calibrate, Calibration};
pub use cpu::CpuExecutor;
pub use error::ExecError;
pub use executor::{ExecutorChoice, ExecutorInfo, ExecutorKind, PageExecutor};
pub use page::{document_digest, reference_document, reference_page, PageSpec};
pub use runtime_dir::ensure_runtime_dir;
pub use scheduler::{
    Compute, DocumentWork, GpuScheduler, JobHandle, PageResult, QueueFull, QueueFullAfter,
    SchedulerConfig, SchedulerConfigError, SchedulerStats, SchedulingPolicy,
};
pub use select::{select_executor, select_executor_with};
pub use wgpu_exec::WgpuExecutor;
