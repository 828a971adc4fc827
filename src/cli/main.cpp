// build/linformer: one binary, one subcommand per job. This file only wires the
// subcommands together and turns errors into messages and exit codes:
//   0 success, 1 error (bad input, bad recipe, failed run), 2 bad command line,
//   3 the subcommand is not implemented yet.

#include "commands.h"
#include "linformer/config/suggest.h"
#include "linformer/core/check.h"
#include "linformer/core/logging.h"
#include "linformer/core/openmp_wait.h"
#include "linformer/core/version.h"
#include "linformer/core/world.h"
#include "linformer/kernels/context.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace {

std::string version_text() {
  return fmt::format(
      "linformer {} (git {}, {} build, {})\n"
      "oneDNN {}\n"
      "CPU ISA used by oneDNN: {}\n"
      "OpenMP threads available: {}\n"
      "OpenMP waiting: {}\n"
      "data parallel: {}",
      linformer::kVersion, linformer::kGitCommit, linformer::kBuildType, linformer::kCompiler,
      linformer::dnnl_version_string(), linformer::dnnl_cpu_isa_name(), omp_get_max_threads(),
      linformer::openmp_wait_policy_description(), linformer::World::build_description());
}

// Exit code 1; in a data-parallel run the whole job ends, so no rank waits for this one.
[[noreturn]] void end_after_error() {
  if (linformer::World::distributed())
    spdlog::error("rank {} of {} failed: ending every rank of the job", linformer::World::rank(),
                  linformer::World::size());
  spdlog::default_logger()->flush();
  linformer::World::abort_all(1);
}

// "unknown command 'frobnicate'…" when the first word that is no option (nor --log-level's
// value) names no subcommand: CLI11 only says that a subcommand is required. Empty otherwise.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--log-level") ++i;
    if (word.empty() || word[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) != names.end()) return {};
    const auto close = linformer::config::closest_match(word, names);
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    return fmt::format("unknown command '{}'{} (the commands: {}; linformer --help says more)", word,
                       close ? fmt::format(" (did you mean '{}'?)", *close) : std::string(), list);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  linformer::bound_openmp_spinning(argv);  // may re-execute the program: before anything else
  try {
    linformer::World::init();
  } catch (const linformer::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  linformer::flush_denormals_to_zero();
  CLI::App app{"linformer: masked-language-model pretraining of Linformer and Transformer encoders on CPUs."};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  app.footer(
      "\nEach command's --help ends with examples. The first run:\n"
      "  linformer prepare --recipe recipes/brown/default.toml\n"
      "  linformer train --recipe recipes/brown/default.toml --run-dir runs/default\n");
  std::string log_level = "info";
  app.add_option("--log-level", log_level,
                 "Console log level: trace, debug, info, warn, error, critical, off (the error that ends the program "
                 "is always printed)")
      ->capture_default_str();

  linformer::cli::add_prepare_command(app);
  linformer::cli::add_train_command(app);
  linformer::cli::add_eval_command(app);
  linformer::cli::add_fill_mask_command(app);
  linformer::cli::add_finetune_command(app);
  linformer::cli::add_classify_command(app);
  linformer::cli::add_bench_command(app);
  linformer::cli::add_options_command(app);

  // Logging must be ready before any subcommand's callback runs.
  app.parse_complete_callback([&] {
    linformer::init_logging(linformer::parse_log_level(log_level));
    if (linformer::World::distributed() && !app.got_subcommand("train"))
      throw linformer::Error(fmt::format(
          "launched by mpirun as {}: only `linformer train` runs data-parallel; run the other commands without mpirun",
          linformer::World::description()));
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (const std::string unknown = unknown_command(app, argc, argv);
        !unknown.empty() && app.get_subcommands().empty()) {
      std::cerr << "linformer: " << unknown << "\n";
      linformer::World::finalize();
      return 2;
    }
    const int code = app.exit(e);
    linformer::World::finalize();
    return code == 0 ? 0 : 2;
  } catch (const linformer::Error& e) {
    linformer::log_ending_error(e.what());
    end_after_error();
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system failure no check above explained: still the user's file, named.
    linformer::log_ending_error(fmt::format("{}{}: {}", e.path1().string(),
                                            e.path2().empty() ? "" : " -> " + e.path2().string(), e.code().message()));
    end_after_error();
  } catch (const std::exception& e) {
    linformer::log_ending_error(fmt::format("unexpected error: {}", e.what()), spdlog::level::critical);
    end_after_error();
  }
  linformer::World::finalize();
  return 0;
}
