#include "linformer/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace linformer {

double learning_rate(const config::OptimConfig& o, int64_t max_updates, int64_t update) {
  using config::LrSchedule;
  const double u = static_cast<double>(update), warmup = o.warmup_updates;
  if (u <= warmup) return o.lr * u / warmup;
  // config::needs_length() lists the schedules that read max_updates below: keep them in step.
  if (o.schedule == LrSchedule::constant) return o.lr;
  if (o.schedule == LrSchedule::inverse_sqrt) return o.lr * std::sqrt(std::max(warmup, 1.0) / u);
  const double span = static_cast<double>(max_updates) - warmup;
  const double p = span > 0 ? std::min(1.0, (u - warmup) / span) : 1.0;
  switch (o.schedule) {
    case LrSchedule::polynomial:
      return o.end_lr + (o.lr - o.end_lr) * std::pow(1.0 - p, o.power);
    case LrSchedule::linear:
      return o.end_lr + (o.lr - o.end_lr) * (1.0 - p);
    case LrSchedule::cosine:
      return o.end_lr + (o.lr - o.end_lr) * 0.5 * (1.0 + std::cos(M_PI * p));
    default:
      return o.lr;
  }
}

}  // namespace linformer
