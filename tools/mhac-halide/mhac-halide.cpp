//===- mhac-halide.cpp - the Halide backend's generator -------------------===//
//
// Part of mhac. `mhac compile --backend halide` runs this program once per layer and target:
// it builds the layer's Halide pipelines, schedules them (the schedule's knobs, or one of
// Halide's autoschedulers), and writes LLVM bitcode holding the run pipeline, the preparation
// pipeline and Halide's runtime; mhac links that bitcode behind its own C entry points. On
// standard output it prints the prepared block's layout, one line per parameter, its f32
// shape outermost first:
//   prepared NAME SIZE...
// A process of its own, because libHalide carries its own LLVM (see docs/design.md).
//
//===----------------------------------------------------------------------===//

#include "tools/mhac-halide/AttentionPipeline.h"
#include "tools/mhac-halide/GeneratorInput.h"
#include "tools/mhac-halide/HalideScheduling.h"

#include "compiler/schedules/Knobs.h"

#include "Halide.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <link.h>

using namespace mhac;
using namespace mhac::halide;

/// The folder of the libHalide.so this process loaded: Halide's autoscheduler plugins lie
/// beside it, in the SDK and in an installation (lib/mhac-halide), so no path is compiled in
/// and an installed tree works wherever it is moved.
static std::string halideLibraryFolder() {
  std::string folder;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        const char *name = info->dlpi_name;
        const char *slash = name ? std::strrchr(name, '/') : nullptr;
        if (!slash || std::strcmp(slash, "/libHalide.so") != 0)
          return 0;
        static_cast<std::string *>(data)->assign(name, slash);
        return 1;
      },
      &folder);
  return folder;
}

int main(int argc, char **argv) {
  std::string error;
  std::optional<GeneratorInput> input = parseGeneratorInput(argc, argv, error);
  if (!input) {
    std::fprintf(stderr, "mhac-halide: error: %s\n", error.c_str());
    return 2;
  }
  try {
    Halide::Target target(input->target);
    int lanes = target.natural_vector_size(Halide::Float(32));
    const HalideSchedule &schedule = input->schedule.halide;
    AttentionPipeline pipeline = buildAttentionPipeline(input->layer, schedule, lanes);
    if (schedule.autoscheduler == HalideAutoscheduler::None) {
      applySchedule(pipeline.funcs, schedule, lanes);
    } else {
      std::string name(autoschedulerName(schedule.autoscheduler)), lower = name;
      for (char &ch : lower)
        ch = static_cast<char>(std::tolower(ch));
      Halide::load_plugin(halideLibraryFolder() + "/libautoschedule_" + lower + ".so");
      Halide::AutoschedulerParams params(name);
      pipeline.run.apply_autoscheduler(target, params);
    }
    pipeline.run.compile_to({{Halide::OutputFileType::bitcode, input->bitcodePath}},
                            pipeline.runArguments, input->runName, target);
    // The preparation shares the run pipeline's copy of Halide's runtime (mhac links the two).
    pipeline.prepare.compile_to({{Halide::OutputFileType::bitcode, input->prepareBitcodePath}},
                                pipeline.prepareArguments, input->prepareName,
                                target.with_feature(Halide::Target::NoRuntime));
    for (const PreparedTensor &tensor : pipeline.prepared) {
      std::printf("prepared %s", tensor.name.c_str());
      for (int64_t size : tensor.shape)
        std::printf(" %lld", static_cast<long long>(size));
      std::printf("\n");
    }
  } catch (const Halide::Error &e) {
    std::fprintf(stderr, "mhac-halide: error: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mhac-halide: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
