#include "linformer/model/stage_times.h"

#include <algorithm>

namespace linformer {

void StageTimes::reset() {
  std::fill(forward_seconds.begin(), forward_seconds.end(), 0.0);
  std::fill(backward_seconds.begin(), backward_seconds.end(), 0.0);
}

StageTimer::StageTimer(std::vector<std::string> names) {
  times_.names = std::move(names);
  times_.forward_seconds.assign(times_.names.size(), 0.0);
  times_.backward_seconds.assign(times_.names.size(), 0.0);
}

}  // namespace linformer
