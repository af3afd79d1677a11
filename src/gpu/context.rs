//! The wgpu device and queue every kernel runs on. In the GUI it is the device eframe renders
//! with, so analysis results can become textures without a trip through the CPU; headless (CLI,
//! tests, benchmarks) it opens its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eframe::wgpu;

use super::pipeline_cache::{self, DiskPipelineCache};

#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter is available ({0}); analyses run on the CPU")]
    NoAdapter(String),
    #[error("the GPU adapter refused to open a device: {0}")]
    Device(String),
    #[error("the GPU did not finish: {0}")]
    Poll(String),
    #[error("the GPU refused the work: {0}")]
    Refused(String),
    #[error("the GPU self-test computed wrong values (worst error {0}); analyses run on the CPU")]
    SelfTest(f32),
}

/// How long a wait polls the device before it blocks: a blocking wait's wake-up cost about
/// 0.1 ms a call on the H100 machine, a large share of an interactive recompute.
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);

/// eframe's renderer, where compute-written textures are registered for egui to draw.
pub type EguiRenderer = std::sync::Arc<eframe::egui::mutex::RwLock<eframe::egui_wgpu::Renderer>>;

#[derive(Clone)]
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_info: wgpu::AdapterInfo,
    /// The renderer drawing the window with this device (the GUI only; none headless).
    pub renderer: Option<EguiRenderer>,
    /// Timestamps around each compute pass (`EDE_GPU_PROFILE`, headless only).
    pub(crate) profiler: Option<std::sync::Arc<super::profile::PassProfiler>>,
    /// The driver's compiled pipelines, kept on disk between runs (none where the adapter
    /// cannot, or `EDE_PIPELINE_CACHE=0`).
    pub(crate) pipeline_cache: Option<Arc<DiskPipelineCache>>,
    /// Kernels compiled ahead of their first use (`prepare`, `take_prepared`).
    pub(crate) prepared: Arc<super::prepared::Prepared>,
    /// Pipelines created on this device so far, compiled or from a cache (tests: a view that
    /// opens must create none).
    compiled: Arc<AtomicUsize>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuContext({})", self.describe())
    }
}

impl GpuContext {
    /// Opens an adapter without a window: the one `EDE_ADAPTER` names, else the best there is
    /// (a software one such as lavapipe included). `EDE_ADAPTER` is an index among the GPU
    /// adapters of the primary backends, software ones left out, in the order the system lists
    /// them, so that jobs side by side on a host of several GPUs each take their own (on two
    /// H200s of one host, 0 and 1 ran on the two GPUs). `WGPU_BACKEND` and the other wgpu
    /// environment variables are honoured. With `EDE_GPU_PROFILE` set, compute passes are
    /// timed (`pass_times`).
    pub fn headless() -> Result<Self, GpuError> {
        let profile = std::env::var_os("EDE_GPU_PROFILE").is_some();
        Self::open_headless(profile, pipeline_cache::folder())
    }

    /// `headless`, with compute passes timed where the adapter can write timestamps.
    pub fn headless_profiled() -> Result<Self, GpuError> {
        Self::open_headless(true, pipeline_cache::folder())
    }

    /// `headless`, its pipeline cache in `folder` whatever the environment says.
    pub fn headless_with_pipeline_cache(folder: &std::path::Path) -> Result<Self, GpuError> {
        Self::open_headless(false, Some(folder.to_path_buf()))
    }

    fn open_headless(
        profile: bool,
        cache_folder: Option<std::path::PathBuf>,
    ) -> Result<Self, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = match chosen_adapter()? {
            Some(index) => {
                // The primary backends only (Vulkan, Metal, DX12): OpenGL lists the same GPUs
                // again, and a 2-GPU host would have indices 0-1 twice over.
                let all = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
                let mut hardware: Vec<wgpu::Adapter> = (all.into_iter())
                    .filter(|a| a.get_info().device_type != wgpu::DeviceType::Cpu)
                    .collect();
                if index >= hardware.len() {
                    return Err(GpuError::NoAdapter(format!(
                        "EDE_ADAPTER={index}, but there are {} GPU adapters (numbered from 0)",
                        hardware.len()
                    )));
                }
                hardware.swap_remove(index)
            }
            None => pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                ..Default::default()
            }))
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?,
        };
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: adapter.limits().max_storage_buffer_binding_size,
            max_buffer_size: adapter.limits().max_buffer_size,
            ..wgpu::Limits::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("ede headless"),
            required_limits: limits,
            required_features: super::profile::PassProfiler::feature(&adapter, profile)
                | pipeline_cache::feature(&adapter)
                | f64_feature(&adapter),
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device(e.to_string()))?;
        let profiler = super::profile::PassProfiler::new(&device).map(Arc::new);
        let info = adapter.get_info();
        let cache = DiskPipelineCache::open(&device, &info, cache_folder);
        Ok(Self::with(device, queue, info, None, profiler, cache))
    }

    fn with(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter_info: wgpu::AdapterInfo,
        renderer: Option<EguiRenderer>,
        profiler: Option<Arc<super::profile::PassProfiler>>,
        pipeline_cache: Option<DiskPipelineCache>,
    ) -> Self {
        Self {
            pipeline_cache: pipeline_cache.map(Arc::new),
            device,
            queue,
            adapter_info,
            renderer,
            profiler,
            prepared: Default::default(),
            compiled: Default::default(),
        }
    }

    /// The device eframe renders with (opened with `device_descriptor`).
    pub fn from_render_state(rs: &eframe::egui_wgpu::RenderState) -> Self {
        let info = rs.adapter.get_info();
        let cache = DiskPipelineCache::open(&rs.device, &info, pipeline_cache::folder());
        Self::with(
            rs.device.clone(),
            rs.queue.clone(),
            info,
            Some(rs.renderer.clone()),
            None,
            cache,
        )
    }

    /// The device eframe opens for the window: its own defaults, with the pipeline cache and f64
    /// in shaders where the adapter has them.
    pub fn device_descriptor(adapter: &wgpu::Adapter) -> wgpu::DeviceDescriptor<'static> {
        let defaults = eframe::egui_wgpu::WgpuSetupCreateNew::without_display_handle();
        let descriptor = (defaults.device_descriptor)(adapter);
        wgpu::DeviceDescriptor {
            required_features: descriptor.required_features
                | pipeline_cache::feature(adapter)
                | f64_feature(adapter),
            ..descriptor
        }
    }

    /// A shader module of ede's own WGSL without naga's runtime checks: no clamped indices,
    /// no counter on every loop, no guard on every integer division. Sound for these modules
    /// because their indices stay in bounds and their loops end by construction (the tests
    /// compare every kernel with its CPU twin), and the driver's robust buffer access still
    /// bounds every buffer access. The Morlet recompute's direct pass took 126.8 -> 117.4 us
    /// with them off (H100, three alternations); Hermite's fit at N = 6 got slower (737 ->
    /// 832 us), so it keeps them.
    pub(crate) fn trusted_shader(&self, label: &'static str, source: String) -> wgpu::ShaderModule {
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        // SAFETY: see above; ShaderRuntimeChecks' requirements are in-bounds accesses and
        // terminating loops.
        unsafe {
            self.device
                .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
        }
    }

    /// A compute pipeline for `entry_point` of `module` through the disk cache, its layout
    /// derived from the shader unless one is given, with `constants` overriding the shader's.
    pub(crate) fn pipeline(
        &self,
        module: &wgpu::ShaderModule,
        entry_point: &str,
        layout: Option<&wgpu::PipelineLayout>,
        constants: &[(&str, f64)],
    ) -> wgpu::ComputePipeline {
        self.compiled.fetch_add(1, Ordering::Relaxed);
        self.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout,
                module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                cache: self.pipeline_cache.as_ref().map(|c| &c.cache),
            })
    }

    /// Writes the disk cache if pipelines were compiled since it was last read or written;
    /// kernel families call it once they have built theirs.
    pub(crate) fn save_pipelines(&self) {
        if let Some(cache) = &self.pipeline_cache {
            cache.save();
        }
    }

    /// The disk cache's file, where there is one.
    pub fn pipeline_cache_file(&self) -> Option<&std::path::Path> {
        self.pipeline_cache.as_ref().map(|c| c.path())
    }

    /// Bytes of compiled pipelines the disk cache handed the driver at the start.
    pub fn pipeline_cache_loaded(&self) -> usize {
        self.pipeline_cache.as_ref().map_or(0, |c| c.loaded())
    }

    /// Pipelines created on this device so far.
    pub fn pipelines_created(&self) -> usize {
        self.compiled.load(Ordering::Relaxed)
    }

    /// "NVIDIA H100 (Vulkan)" and the like, for the UI and the JSON of results.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?})",
            self.adapter_info.name, self.adapter_info.backend
        )
    }

    /// True for software adapters (lavapipe, WARP): correct, but not for speed claims.
    pub fn is_software(&self) -> bool {
        self.adapter_info.device_type == wgpu::DeviceType::Cpu
    }

    /// Runs a small kernel and compares it with the CPU; a context that fails is not used.
    /// Its validation errors are caught rather than left to wgpu's handler, which panics: on
    /// a machine without Vulkan, wgpu falls back to OpenGL, where a window draws but compute
    /// pipelines can be refused.
    pub fn self_test(&self) -> Result<(), GpuError> {
        // OpenGL without compute shaders (llvmpipe's, for one) reports no workgroup at all.
        if self.device.limits().max_compute_invocations_per_workgroup < 64 {
            return Err(GpuError::Refused(format!(
                "{} runs no compute shaders; analyses run on the CPU",
                self.describe()
            )));
        }
        let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 100.0).collect();
        let b: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let y = super::saxpy::saxpy(self, 1.5, &x, &b);
        if let Some(e) = pollster::block_on(scope.pop()) {
            // wgpu's errors run to several lines; the status line has room for one.
            let e = e.to_string();
            return Err(GpuError::Refused(format!(
                "{}: {}; analyses run on the CPU",
                self.describe(),
                e.lines().next().unwrap_or_default()
            )));
        }
        let y = y?;
        let worst = y
            .iter()
            .zip(super::saxpy::saxpy_cpu(1.5, &x, &b))
            .map(|(g, c)| (g - c).abs())
            .fold(0.0f32, f32::max);
        if worst > 1e-4 {
            return Err(GpuError::SelfTest(worst));
        }
        Ok(())
    }

    /// Polls the device for up to `SPIN` until `done` says so (hardware adapters only: on a
    /// software one the spinning thread would take a core from the work it waits for).
    fn spin(&self, mut done: impl FnMut(wgpu::PollStatus) -> bool) -> Result<bool, GpuError> {
        if self.is_software() {
            return Ok(false);
        }
        let start = std::time::Instant::now();
        while start.elapsed() < SPIN {
            let status = (self.device.poll(wgpu::PollType::Poll))
                .map_err(|e| GpuError::Poll(e.to_string()))?;
            if done(status) {
                return Ok(true);
            }
            std::hint::spin_loop();
        }
        Ok(false)
    }

    /// Blocks until the queue is idle.
    pub fn wait(&self) -> Result<(), GpuError> {
        if self.spin(|status| status.is_queue_empty())? {
            return Ok(());
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| GpuError::Poll(e.to_string()))
    }

    /// Runs `work` with its validation and out-of-memory errors returned instead of ending the
    /// process (wgpu's default for errors nobody captures).
    pub fn guarded<T>(&self, work: impl FnOnce() -> T) -> Result<T, GpuError> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = work();
        let invalid = pollster::block_on(validation.pop());
        let out_of_memory = pollster::block_on(oom.pop());
        match invalid.or(out_of_memory) {
            Some(e) => Err(GpuError::Refused(e.to_string())),
            None => Ok(out),
        }
    }

    /// Copies a storage buffer back to the CPU (tests, CLI results; views use textures).
    pub fn read_back(&self, src: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>, GpuError> {
        self.read_back_range(src, 0, bytes)
    }

    /// Maps the whole of `buffer` (MAP_READ or MAP_WRITE, as `mode`) once the work submitted
    /// before is done.
    pub fn map(&self, buffer: &wgpu::Buffer, mode: wgpu::MapMode) -> Result<(), GpuError> {
        self.map_after(buffer, mode, None)
    }

    /// Maps `buffer` once `submission` (else everything submitted before) is done: work
    /// submitted after it may still be running, as when results are read back while the next
    /// piece computes.
    pub fn map_after(
        &self,
        buffer: &wgpu::Buffer,
        mode: wgpu::MapMode,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<(), GpuError> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.slice(..).map_async(mode, move |r| {
            let _ = tx.send(r);
        });
        let mut spun = None;
        if self.spin(|_| {
            spun = rx.try_recv().ok();
            spun.is_some()
        })? {
            return spun
                .unwrap_or(Ok(()))
                .map_err(|e| GpuError::Poll(e.to_string()));
        }
        let poll = wgpu::PollType::Wait {
            submission_index: submission,
            timeout: None,
        };
        (self.device.poll(poll)).map_err(|e| GpuError::Poll(e.to_string()))?;
        // wgpu maps a buffer once the last submission that used it is done; should the map
        // still be pending, everything is waited for.
        let mapped = match rx.try_recv() {
            Ok(r) => r,
            Err(_) => {
                self.wait()?;
                rx.recv().map_err(|e| GpuError::Poll(e.to_string()))?
            }
        };
        mapped.map_err(|e| GpuError::Poll(e.to_string()))
    }

    /// The first `bytes` of `staging` (MAP_READ) once `submission` (else everything submitted
    /// before) is done.
    pub fn read_mapped(
        &self,
        staging: &wgpu::Buffer,
        bytes: u64,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<u8>, GpuError> {
        self.with_mapped(staging, bytes, submission, |data| data.to_vec())
    }

    /// `read` of the first `bytes` of `staging` (MAP_READ), mapped once `submission` (else
    /// everything submitted before) is done: results are copied once, straight to where they
    /// go.
    pub fn with_mapped<T>(
        &self,
        staging: &wgpu::Buffer,
        bytes: u64,
        submission: Option<wgpu::SubmissionIndex>,
        read: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, GpuError> {
        self.map_after(staging, wgpu::MapMode::Read, submission)?;
        let out = (staging.slice(..bytes.max(4)).get_mapped_range())
            .map(|view| read(&view[..bytes as usize]));
        // Unmapped whatever happened, so that the buffer can be used again.
        staging.unmap();
        out.map_err(|e| GpuError::Poll(e.to_string()))
    }

    /// The buffer `kept` holds when it has at least `bytes` and `usage`, else a new one, kept
    /// there for the next call (sizes only grow). Kernels keep their large buffers this way:
    /// allocating and first touching them cost more than their work in interactive
    /// recomputes. (The queue's order keeps work already submitted on a reused buffer right.)
    pub(crate) fn kept_buffer(
        &self,
        kept: &mut Option<wgpu::Buffer>,
        label: &str,
        bytes: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let bytes = bytes.max(4);
        match kept {
            Some(buffer) if buffer.size() >= bytes && buffer.usage().contains(usage) => {
                buffer.clone()
            }
            _ => kept
                .insert(self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                }))
                .clone(),
        }
    }

    /// A zeroed buffer of `bytes` (at least 8) for `usage`.
    pub(crate) fn empty_buffer(
        &self,
        label: &str,
        bytes: usize,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(8) as u64,
            usage,
            mapped_at_creation: false,
        })
    }

    /// A small buffer for `usage` holding `contents` (a kernel's parameters, a matrix).
    pub(crate) fn buffer_with(
        &self,
        label: &str,
        contents: &[u8],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        use wgpu::util::DeviceExt;
        (self.device).create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage,
        })
    }

    /// The bind group 0 of `pipeline` with `entries`.
    pub(crate) fn bind_group(
        &self,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        entries: &[wgpu::BindGroupEntry<'_>],
    ) -> wgpu::BindGroup {
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &pipeline.get_bind_group_layout(0),
            entries,
        })
    }

    /// A buffer (`usage`) holding `data`, copied into mapped memory by the CPU's threads
    /// (`copy_in_parallel`): one thread's copy of FastICA's 20 MB of data took milliseconds.
    pub(crate) fn upload(
        &self,
        label: &str,
        data: &[u8],
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, GpuError> {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (data.len() as u64).next_multiple_of(4).max(4),
            usage,
            mapped_at_creation: true,
        });
        {
            let mut view = (buffer.slice(..).get_mapped_range_mut())
                .map_err(|e| GpuError::Refused(e.to_string()))?;
            copy_in_parallel(view.slice(..data.len()), data);
        }
        buffer.unmap();
        Ok(buffer)
    }

    /// `len` f32s from the start of a storage buffer, copied out of mapped memory by the CPU's
    /// threads (one thread's copy of FastICA's 20 MB of sources, through an intermediate
    /// `Vec<u8>`, took about 10 ms on the H100's host).
    pub(crate) fn read_back_f32(
        &self,
        src: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<f32>, GpuError> {
        use rayon::prelude::*;
        const PIECE: usize = 1 << 18;
        let bytes = (len * 4) as u64;
        let (staging, submission) = self.copied_back(src, 0, bytes);
        self.with_mapped(&staging, bytes, Some(submission), |data| {
            let mut out = vec![0.0f32; len];
            (out.par_chunks_mut(PIECE))
                .zip(data.par_chunks(PIECE * 4))
                .for_each(|(to, from)| to.copy_from_slice(bytemuck::cast_slice(from)));
            out
        })
    }

    /// Copies `bytes` from `offset` of a storage buffer back (both multiples of 4).
    pub fn read_back_range(
        &self,
        src: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<u8>, GpuError> {
        let (staging, submission) = self.copied_back(src, offset, bytes);
        self.read_mapped(&staging, bytes, Some(submission))
    }

    /// A staging buffer (MAP_READ) that `bytes` from `offset` of `src` are being copied into,
    /// and the copy's submission.
    fn copied_back(
        &self,
        src: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> (wgpu::Buffer, wgpu::SubmissionIndex) {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, offset, &staging, 0, bytes);
        (staging, self.queue.submit([enc.finish()]))
    }
}

/// A bind group entry for a whole buffer.
pub(crate) fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

/// A compute pipeline for `entry_point` of `module`, its layout derived from the shader.
pub(crate) fn compute_pipeline(
    ctx: &GpuContext,
    module: &wgpu::ShaderModule,
    entry_point: &str,
) -> wgpu::ComputePipeline {
    ctx.pipeline(module, entry_point, None, &[])
}

/// f64 in shaders where the adapter has it: FastICA's whitening (gpu/whiten.rs).
fn f64_feature(adapter: &wgpu::Adapter) -> wgpu::Features {
    adapter.features() & wgpu::Features::SHADER_F64
}

/// `EDE_ADAPTER` as an index; an error for anything else but unset or empty.
fn chosen_adapter() -> Result<Option<usize>, GpuError> {
    match std::env::var("EDE_ADAPTER") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map(Some).map_err(|_| {
            GpuError::NoAdapter(format!(
                "EDE_ADAPTER must be an adapter index (0, 1, ...), got {v:?}"
            ))
        }),
        _ => Ok(None),
    }
}

/// Copies `src` into mapped memory `dst` (as long) by the CPU's threads, in pieces: one
/// thread's copy of the batch scalogram's 33 MB segments took about 3 ms each on the H100's
/// host.
pub(crate) fn copy_in_parallel(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 20;
    assert_eq!(dst.len(), src.len(), "as many bytes as the mapping");
    // Pieces of a fixed size are Send (slices of them are not), the rest after them.
    let (pieces, mut rest) = dst.into_chunks::<PIECE>();
    let pieces: Vec<wgpu::WriteOnly<'_, [u8; PIECE]>> = pieces.into_iter().collect();
    let whole = pieces.len() * PIECE;
    (pieces
        .into_par_iter()
        .zip(src[..whole].par_chunks_exact(PIECE)))
    .for_each(|(p, from)| {
        wgpu::WriteOnly::<'_, [u8]>::from(p).copy_from_slice(from);
    });
    rest.copy_from_slice(&src[whole..]);
}
