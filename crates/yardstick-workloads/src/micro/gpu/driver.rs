//! A small RAII layer over the CUDA driver API: cudarc's `result` functions, whose library
//! (`libcuda.so.1`) is loaded on first use. Everything here runs on the calling thread with the
//! device's primary context current; one [`Device`] at a time.

use std::ffi::{CString, c_void};

use cudarc::driver::{DriverError, result, sys};

use super::super::MicroError;

/// A driver call's error as a micro error that names what was being done.
pub(crate) fn cu<T>(r: Result<T, DriverError>, what: &str) -> Result<T, MicroError> {
    r.map_err(|e| MicroError::Unsupported(format!("CUDA driver: {what}: {}", name_of(e))))
}

fn name_of(e: DriverError) -> String {
    match e.error_name() {
        Ok(n) => n.to_string_lossy().into_owned(),
        Err(_) => format!("{:?}", e.0),
    }
}

/// One GPU: its primary context (current on this thread) and a non-blocking stream.
pub(crate) struct Device {
    pub ordinal: usize,
    dev: sys::CUdevice,
    pub ctx: sys::CUcontext,
    pub stream: sys::CUstream,
    pub name: String,
    pub sms: u32,
    pub l2_bytes: u64,
    pub cc: (i32, i32),
    pub total_bytes: u64,
}

impl Device {
    /// Opens GPU `ordinal` (as the driver numbers them: `CUDA_VISIBLE_DEVICES` applies).
    pub fn open(ordinal: usize) -> Result<Self, MicroError> {
        cu(result::init(), "cuInit")?;
        let dev = cu(result::device::get(ordinal as i32), "cuDeviceGet")?;
        let ctx = cu(
            unsafe { result::primary_ctx::retain(dev) },
            "cuDevicePrimaryCtxRetain",
        )?;
        cu(unsafe { result::ctx::set_current(ctx) }, "cuCtxSetCurrent")?;
        let stream = cu(
            result::stream::create(result::stream::StreamKind::NonBlocking),
            "cuStreamCreate",
        )?;
        let attr = |a| unsafe { result::device::get_attribute(dev, a) };
        use sys::CUdevice_attribute as A;
        let device = Device {
            ordinal,
            dev,
            ctx,
            stream,
            name: result::device::get_name(dev).unwrap_or_else(|_| "unknown GPU".into()),
            sms: cu(
                attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                "SM count",
            )? as u32,
            l2_bytes: cu(attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), "L2 size")? as u64,
            cc: (
                cu(
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                    "compute capability",
                )?,
                cu(
                    attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                    "compute capability",
                )?,
            ),
            total_bytes: cu(unsafe { result::device::total_mem(dev) }, "total memory")? as u64,
        };
        Ok(device)
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<(), MicroError> {
        cu(
            unsafe { result::ctx::set_current(self.ctx) },
            "cuCtxSetCurrent",
        )
    }

    /// Free device memory, bytes.
    pub fn free_bytes(&self) -> Result<u64, MicroError> {
        self.bind()?;
        Ok(cu(result::mem_get_info(), "cuMemGetInfo")?.0 as u64)
    }

    /// Waits for everything queued on the stream.
    pub fn sync(&self) -> Result<(), MicroError> {
        cu(
            unsafe { result::stream::synchronize(self.stream) },
            "cuStreamSynchronize",
        )
    }

    /// The raw device handle.
    pub fn cu_device(&self) -> sys::CUdevice {
        self.dev
    }

    /// Seconds per repetition of `op`, timed by CUDA events around `reps` back-to-back
    /// repetitions on the stream (so launch gaps count against us, never for us).
    pub fn time(
        &self,
        reps: usize,
        mut op: impl FnMut() -> Result<(), MicroError>,
    ) -> Result<f64, MicroError> {
        let start = Event::new()?;
        let end = Event::new()?;
        cu(
            unsafe { result::event::record(start.0, self.stream) },
            "cuEventRecord",
        )?;
        for _ in 0..reps.max(1) {
            op()?;
        }
        cu(
            unsafe { result::event::record(end.0, self.stream) },
            "cuEventRecord",
        )?;
        cu(
            unsafe { result::event::synchronize(end.0) },
            "cuEventSynchronize",
        )?;
        let ms = cu(
            unsafe { result::event::elapsed(start.0, end.0) },
            "cuEventElapsedTime",
        )?;
        Ok(f64::from(ms) / 1e3 / reps.max(1) as f64)
    }

    /// Repetitions so that one timed batch of `op` lasts at least `target_s` (events resolve
    /// about half a microsecond; a batch of milliseconds makes that negligible).
    pub fn reps_for(
        &self,
        target_s: f64,
        mut op: impl FnMut() -> Result<(), MicroError>,
    ) -> Result<usize, MicroError> {
        let once = self.time(1, &mut op)?.max(1e-7);
        Ok(((target_s / once).ceil() as usize).clamp(1, 10_000))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::stream::synchronize(self.stream);
            let _ = result::stream::destroy(self.stream);
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

/// A timing event.
struct Event(sys::CUevent);

impl Event {
    fn new() -> Result<Self, MicroError> {
        Ok(Event(cu(
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT),
            "cuEventCreate",
        )?))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe {
            let _ = result::event::destroy(self.0);
        }
    }
}

/// Device memory, freed on drop.
pub(crate) struct DevBuf {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl DevBuf {
    /// Allocates `bytes` on the current device.
    pub fn new(bytes: usize) -> Result<Self, MicroError> {
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| {
            MicroError::Unsupported(format!(
                "CUDA driver: allocating {bytes} bytes on the GPU: {}",
                name_of(e)
            ))
        })?;
        Ok(DevBuf { ptr, bytes })
    }

    /// Fills the buffer with `tile` repeated (the last copy cut short).
    pub fn fill_tiled(&self, tile: &[u8]) -> Result<(), MicroError> {
        let mut off = 0;
        while off < self.bytes {
            let n = tile.len().min(self.bytes - off);
            cu(
                unsafe { result::memcpy_htod_sync(self.ptr + off as u64, &tile[..n]) },
                "cuMemcpyHtoD",
            )?;
            off += n;
        }
        Ok(())
    }

    /// Reads `out.len()` bytes at byte offset `off`.
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result<(), MicroError> {
        cu(
            unsafe { result::memcpy_dtoh_sync(out, self.ptr + off as u64) },
            "cuMemcpyDtoH",
        )
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// Page-locked host memory (what DMA engines copy at full speed), freed on drop.
pub(crate) struct Pinned {
    ptr: *mut c_void,
    bytes: usize,
}

impl Pinned {
    pub fn new(bytes: usize) -> Result<Self, MicroError> {
        let ptr = cu(
            unsafe { result::malloc_host(bytes.max(1), 0) },
            "cuMemHostAlloc",
        )?;
        Ok(Pinned { ptr, bytes })
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is `bytes` long, owned by self and freed only on drop.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.bytes) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        unsafe {
            let _ = result::free_host(self.ptr);
        }
    }
}

/// A module of kernels loaded from PTX (JIT-compiled by the driver for this GPU).
pub(crate) struct Module(sys::CUmodule);

impl Module {
    pub fn load(ptx: &str) -> Result<Self, MicroError> {
        let src = CString::new(ptx)
            .map_err(|_| MicroError::Validation("the embedded PTX holds a NUL byte".into()))?;
        Ok(Module(cu(
            unsafe { result::module::load_data(src.as_ptr().cast()) },
            "loading the probe's PTX (cuModuleLoadData)",
        )?))
    }

    pub fn function(&self, name: &str) -> Result<sys::CUfunction, MicroError> {
        let c = CString::new(name).expect("kernel names hold no NUL");
        cu(
            unsafe { result::module::get_function(self.0, c) },
            "cuModuleGetFunction",
        )
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        unsafe {
            let _ = result::module::unload(self.0);
        }
    }
}

/// Launches `f` on `grid` blocks of `block` threads with the given kernel arguments (each a
/// pointer to the argument's value, in the kernel's parameter order).
pub(crate) fn launch(
    device: &Device,
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    args: &mut [*mut c_void],
) -> Result<(), MicroError> {
    cu(
        unsafe { result::launch_kernel(f, (grid, 1, 1), (block, 1, 1), 0, device.stream, args) },
        "cuLaunchKernel",
    )
}
