// The main of the fuzz targets in builds without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file given and every file under every directory given (recursively, sorted by path).
// CTest runs each target on its tests/fuzz/<name>/ seeds and regressions, so every build checks
// that no input found once crashes again. A crash or an escaping exception aborts; the line
// printed before it names the input.
//
//   fuzz_recipe tests/fuzz/recipe          (replay one target's corpus)
//   fuzz_recipe crash-1234abcd             (reproduce one input)

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) inputs.push_back(entry.path());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: '%s' is neither a file nor a directory\n", argv[i]);
      return 2;
    }
  }
  // No input at all would pass silently: a renamed corpus directory must fail instead.
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR… (at least one input file)\n", argv[0]);
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::printf("replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs, no finding\n", inputs.size());
  return 0;
}
