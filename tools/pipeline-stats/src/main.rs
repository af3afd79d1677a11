//! `ede-pipeline-stats OUT_DIR FILE.wgsl:ENTRY...`: compiles each entry point of each WGSL file
//! the way wgpu 30 does on Vulkan (naga to SPIR-V 1.6, indices clamped, buffer accesses left to
//! the driver's robustness, loops bounded), creates a compute pipeline with statistics captured
//! (VK_KHR_pipeline_executable_properties) and prints what the driver reports: on NVIDIA the
//! registers a thread uses, the code's size, its local and shared memory. Internal
//! representations, where a driver gives any, are written to OUT_DIR.
//!
//! wgpu creates its pipelines without that flag, so ede cannot ask for these itself. Hermite's
//! generated sources come from `EDE_HERMITE_SHADER_DUMP=DIR ede bench hermite ...`. Run on the
//! GPU machine (docs/BENCHMARKS.md before its condensing: `git log -p docs/BENCHMARKS.md`, "Hermite: what the driver makes of the fit"): the first
//! physical device is used, descriptor set 0 has a uniform buffer at binding 0 and storage
//! buffers at 1-11.
use ash::vk;
use std::ffi::CStr;

fn spirv(src: &str, entry: &str) -> Vec<u32> {
    let module =
        naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .expect("a valid module");
    // wgpu-hal's Vulkan options (wgpu-hal 30, vulkan/adapter.rs) for a device with
    // robustBufferAccess2 and Vulkan 1.3.
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Restrict,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory:
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native,
        force_loop_bounding: true,
        emit_int_div_checks: true,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: entry.into(),
    };
    naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).expect("SPIR-V")
}

fn text(chars: &[std::ffi::c_char]) -> String {
    // SAFETY: Vulkan's fixed-size name and description strings end with a NUL.
    unsafe { CStr::from_ptr(chars.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: ede-pipeline-stats OUT_DIR FILE.wgsl:ENTRY...");
        std::process::exit(2);
    }
    let out_dir = std::path::PathBuf::from(&args[1]);
    std::fs::create_dir_all(&out_dir).expect("OUT_DIR");
    // SAFETY: every Vulkan call below follows the specification's valid usage for the objects
    // made here; the process ends after them.
    unsafe {
        let entry = ash::Entry::load().expect("a Vulkan loader");
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = (entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        ))
        .expect("instance");
        let physical = instance.enumerate_physical_devices().expect("devices")[0];
        let props = instance.get_physical_device_properties(physical);
        println!("device: {}", text(&props.device_name));
        let priority = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&priority)];
        let extensions = [ash::khr::pipeline_executable_properties::NAME.as_ptr()];
        let mut executable_info =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                .pipeline_executable_info(true);
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default()
            .shader_zero_initialize_workgroup_memory(true);
        let features = vk::PhysicalDeviceFeatures::default().robust_buffer_access(true);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&extensions)
            .enabled_features(&features)
            .push_next(&mut executable_info)
            .push_next(&mut v13);
        let device = (instance.create_device(physical, &info, None))
            .expect("a device with VK_KHR_pipeline_executable_properties");
        let executables = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        let bindings: Vec<_> = (0..12)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(match b {
                        0 => vk::DescriptorType::UNIFORM_BUFFER,
                        _ => vk::DescriptorType::STORAGE_BUFFER,
                    })
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let set = (device.create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
            None,
        ))
        .expect("set layout");
        let layout = (device.create_pipeline_layout(
            &vk::PipelineLayoutCreateInfo::default().set_layouts(&[set]),
            None,
        ))
        .expect("pipeline layout");
        for spec in &args[2..] {
            let (file, entry_point) = spec.split_once(':').expect("FILE.wgsl:ENTRY");
            let words = spirv(
                &std::fs::read_to_string(file).expect("readable WGSL"),
                entry_point,
            );
            let module = (device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None))
            .expect("shader module");
            let name = std::ffi::CString::new(entry_point).expect("an entry point's name");
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(&name);
            let create = [vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(layout)
                .flags(
                    vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                        | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR,
                )];
            let started = std::time::Instant::now();
            let pipeline =
                (device.create_compute_pipelines(vk::PipelineCache::null(), &create, None))
                    .map_err(|e| e.1)
                    .expect("pipeline")[0];
            println!(
                "=== {spec}: compiled in {:.0} ms from {} SPIR-V words",
                started.elapsed().as_secs_f64() * 1e3,
                words.len()
            );
            let all = (executables.get_pipeline_executable_properties(
                &vk::PipelineInfoKHR::default().pipeline(pipeline),
            ))
            .expect("executables");
            for (i, executable) in all.iter().enumerate() {
                println!(
                    "  {} ({}), subgroups of {}",
                    text(&executable.name),
                    text(&executable.description),
                    executable.subgroup_size
                );
                let which = vk::PipelineExecutableInfoKHR::default()
                    .pipeline(pipeline)
                    .executable_index(i as u32);
                for s in executables
                    .get_pipeline_executable_statistics(&which)
                    .expect("statistics")
                {
                    let value = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => s.value.f64.to_string(),
                    };
                    println!("    {} = {value} ({})", text(&s.name), text(&s.description));
                }
                write_representations(
                    &executables,
                    &device,
                    &which,
                    &out_dir,
                    file,
                    entry_point,
                    i,
                );
            }
        }
    }
}

/// The executable's internal representations (count, then sizes, then the data), one file each.
unsafe fn write_representations(
    executables: &ash::khr::pipeline_executable_properties::Device,
    device: &ash::Device,
    which: &vk::PipelineExecutableInfoKHR,
    out_dir: &std::path::Path,
    file: &str,
    entry_point: &str,
    index: usize,
) {
    let get = executables
        .fp()
        .get_pipeline_executable_internal_representations_khr;
    let mut count = 0u32;
    // SAFETY: the two-call idiom of the specification, with buffers of the sizes it reported.
    unsafe {
        get(device.handle(), which, &mut count, std::ptr::null_mut())
            .result()
            .expect("representations");
        let mut reps =
            vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
        get(device.handle(), which, &mut count, reps.as_mut_ptr())
            .result()
            .expect("representations");
        let mut data: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, d) in reps.iter_mut().zip(&mut data) {
            r.p_data = d.as_mut_ptr().cast();
        }
        get(device.handle(), which, &mut count, reps.as_mut_ptr())
            .result()
            .expect("representations");
        let stem = std::path::Path::new(file)
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy();
        for (j, (r, d)) in reps.iter().zip(&data).enumerate() {
            let kind = if r.is_text == vk::TRUE { "txt" } else { "bin" };
            let name = format!("{stem}-{entry_point}-{index}-{j}.{kind}");
            std::fs::write(out_dir.join(&name), d).expect("OUT_DIR writable");
            println!(
                "    {} ({}): {} bytes -> {name}",
                text(&r.name),
                text(&r.description),
                r.data_size
            );
        }
    }
}
