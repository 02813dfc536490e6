//! Finding an adapter and building the device, queue and compute pipeline.
//!
//! Done once per executor: adapter discovery and shader compilation cost
//! tens of milliseconds (more on lavapipe), far too much for every batch.

use super::scope::ScopeGuards;
use crate::error::ExecError;
use wgpu::{
    Backends, Instance, InstanceDescriptor, InstanceFlags, PowerPreference, RequestAdapterOptions,
};

/// Everything created once: the shared device and queue plus the pipeline.
pub(crate) struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub pipeline: wgpu::ComputePipeline,
    pub bind_group_layout: wgpu::BindGroupLayout,
    pub adapter_desc: String,
}

/// Opens the best adapter (a discrete GPU over a software one) and compiles the shader.
pub(crate) fn create_context() -> Result<GpuContext, ExecError> {
    let mut desc = InstanceDescriptor::new_without_display_handle();
    desc.backends = Backends::all().with_env();
    // Not `InstanceFlags::default()`: in debug builds that asks for the Vulkan
    // validation layers, which are rarely installed and only add noise here.
    // wgpu's own API validation stays on regardless. WGPU_* env vars still apply.
    desc.flags = InstanceFlags::VALIDATION_INDIRECT_CALL.with_env();
    let instance = Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&RequestAdapterOptions {
        power_preference: PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| ExecError::NoAdapter(e.to_string()))?;
    let info = adapter.get_info();
    let adapter_desc = format!("{}, {:?}, {:?}", info.name, info.backend, info.device_type);
    // Ask for the adapter's own limits: the defaults (e.g. 128 MiB storage
    // bindings) are lower than what big GPUs offer, and every batch is checked
    // against `device.limits()` before dispatch anyway.
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("gpu-executor"),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| ExecError::Device(format!("{adapter_desc}: {e}")))?;
    // Errors outside our error scopes would otherwise panic inside wgpu.
    device.on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| {
        tracing::error!(error = %e, "uncaptured wgpu error");
    }));
    device.set_device_lost_callback(|reason, msg| {
        tracing::error!(?reason, %msg, "GPU device lost");
    });

    let scope = ScopeGuards::push(&device);
    let module = device.create_shader_module(wgpu::include_wgsl!("page.wgsl"));
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("page"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group_layout = pipeline.get_bind_group_layout(0);
    scope.pop()?;
    Ok(GpuContext {
        device,
        queue,
        pipeline,
        bind_group_layout,
        adapter_desc,
    })
}
