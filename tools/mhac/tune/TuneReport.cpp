//===- TuneReport.cpp - what a tuning session did, as JSON and HTML -------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/TuneReport.h"

#include "compiler/schedules/Knobs.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mhac {
namespace {

namespace json = llvm::json;

json::Object knobsOf(const Schedule &schedule) {
  json::Object object;
  for (const Knob *k : backendKnobs(Backend::Mlir))
    object[std::string(k->name)] = formatKnobValue(*k, k->get(schedule));
  return object;
}

json::Array numbers(const std::vector<double> &values) {
  json::Array array;
  for (double value : values)
    array.push_back(value);
  return array;
}

/// The candidates measured, as (candidate, its time over the default's).
std::vector<std::pair<const Candidate *, double>> measuredRatios(const TuneSession &session) {
  std::vector<std::pair<const Candidate *, double>> result;
  for (const Candidate &c : session.candidates)
    if (c.measured())
      result.emplace_back(&c, c.id == session.defaultId ? 1.0 : median(c.ratios));
  return result;
}

/// The one knob in which `c` differs from the default, or null.
const Knob *onlyChangedKnob(const Candidate &c, const Schedule &defaults) {
  const Knob *changed = nullptr;
  for (const Knob &k : knobs()) {
    if (k.get(c.schedule) == k.get(defaults))
      continue;
    if (changed)
      return nullptr;
    changed = &k;
  }
  return changed;
}

std::string escapeHTML(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// An SVG plot area: maps data coordinates into a `width` x `height` picture with margins.
class Plot {
public:
  Plot(double xMin, double xMax, double yMin, double yMax)
      : xMin_(xMin), xMax_(xMax > xMin ? xMax : xMin + 1), yMin_(yMin),
        yMax_(yMax > yMin ? yMax : yMin + 1) {}

  double x(double value) const {
    return kMargin + (value - xMin_) / (xMax_ - xMin_) * (kWidth - 2 * kMargin);
  }
  double y(double value) const {
    return kHeight - kMargin - (value - yMin_) / (yMax_ - yMin_) * (kHeight - 2 * kMargin);
  }

  /// The frame, the axis labels, and a dashed line at y = `reference`.
  std::string frame(const std::string &xLabel, const std::string &yLabel, double reference) const {
    std::string svg = fmt::format(
        R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" font-size="11">)"
        R"(<rect x="{2}" y="{2}" width="{3}" height="{4}" fill="none" stroke="#888"/>)",
        kWidth, kHeight, kMargin, kWidth - 2 * kMargin, kHeight - 2 * kMargin);
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", kWidth / 2,
                       kHeight - 8, escapeHTML(xLabel));
    svg += fmt::format(R"svg(<text x="12" y="{}" transform="rotate(-90 12 {})" )svg"
                       R"(text-anchor="middle">{}</text>)",
                       kHeight / 2, kHeight / 2, escapeHTML(yLabel));
    for (double value : {yMin_, reference, yMax_})
      svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{:.3g}</text>)",
                         kMargin - 4, y(value) + 4, value);
    svg += fmt::format(R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" )"
                       R"(stroke="#c00" stroke-dasharray="4 3"/>)",
                       x(xMin_), x(xMax_), y(reference), y(reference));
    return svg;
  }

  static constexpr double kWidth = 640, kHeight = 300, kMargin = 48;

private:
  double xMin_, xMax_, yMin_, yMax_;
};

/// The smallest and largest second elements of `pairs`, and 1 (the default's ratio).
template <typename T>
std::pair<double, double> ratioRange(const std::vector<std::pair<T, double>> &pairs) {
  double low = 1, high = 1;
  for (const auto &pair : pairs) {
    low = std::min(low, pair.second);
    high = std::max(high, pair.second);
  }
  return {low, high};
}

std::string bestOverTimePlot(const TuneSession &session) {
  const auto &points = session.bestOverTime;
  if (points.empty())
    return "<p>Nothing was measured.</p>";
  auto [yMin, yMax] = ratioRange(points);
  Plot plot(0, session.elapsedSeconds, yMin * 0.95, yMax * 1.05);
  std::string svg = plot.frame("seconds into the session", "best time / default's", 1);
  std::string line;
  for (const auto &[t, ratio] : points)
    line += fmt::format("{:.1f},{:.1f} ", plot.x(t), plot.y(ratio));
  line +=
      fmt::format("{:.1f},{:.1f}", plot.x(session.elapsedSeconds), plot.y(points.back().second));
  svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="#06c" stroke-width="2"/>)", line);
  return svg + "</svg>";
}

std::string candidatesPlot(const TuneSession &session) {
  auto ratios = measuredRatios(session);
  if (ratios.empty())
    return "<p>Nothing was measured.</p>";
  auto [yMin, yMax] = ratioRange(ratios);
  Plot plot(0, static_cast<double>(session.candidates.size()), yMin * 0.95, yMax * 1.05);
  std::string svg = plot.frame("candidate", "time / default's", 1);
  for (const auto &[c, ratio] : ratios)
    svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>#{} {} )"
                       R"(({}): {:.3f}</title></circle>)",
                       plot.x(c->id + 0.5), plot.y(ratio), ratio < 1 ? "#080" : "#a00", c->id,
                       escapeHTML(c->origin), statusName(c->status), ratio);
  return svg + "</svg>";
}

std::string predictedPlot(const TuneSession &session) {
  auto ratios = measuredRatios(session);
  if (ratios.empty())
    return "<p>Nothing was measured.</p>";
  double lo = 1, hi = 1;
  for (const auto &[c, ratio] : ratios)
    lo = std::min({lo, ratio, c->predicted}), hi = std::max({hi, ratio, c->predicted});
  Plot plot(lo * 0.95, hi * 1.05, lo * 0.95, hi * 1.05);
  std::string svg = plot.frame("predicted / default's", "measured / default's", 1);
  svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#bbb"/>)",
                     plot.x(lo), plot.y(lo), plot.x(hi), plot.y(hi));
  for (const auto &[c, ratio] : ratios)
    svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="#06c"><title>#{}: )"
                       R"(predicted {:.3f}, measured {:.3f}</title></circle>)",
                       plot.x(c->predicted), plot.y(ratio), c->id, c->predicted, ratio);
  return svg + "</svg>";
}

std::string knobTable(const TuneSession &session) {
  const Schedule &defaults = session.candidates[session.defaultId].schedule;
  std::string rows;
  for (const auto &[c, ratio] : measuredRatios(session)) {
    const Knob *k = onlyChangedKnob(*c, defaults);
    if (!k)
      continue;
    double speedup = 1 / ratio;
    rows += fmt::format(
        "<tr><td>{} = {}</td><td>{:.3f}x</td><td><svg width=\"200\" height=\"10\"><rect "
        "width=\"{:.0f}\" height=\"10\" fill=\"{}\"/></svg></td></tr>\n",
        k->name, formatKnobValue(*k, k->get(c->schedule)), speedup,
        std::clamp(100 * speedup, 0.0, 200.0), speedup > 1 ? "#080" : "#a00");
  }
  if (rows.empty())
    return "<p>No candidate differing from the default in one knob was measured.</p>";
  return "<table><tr><th>one knob changed</th><th>speed-up</th><th></th></tr>\n" + rows +
         "</table>";
}

} // namespace

std::string reportJSON(const TuneSession &session) {
  json::Array candidates;
  for (const Candidate &c : session.candidates) {
    json::Object object{{"id", c.id},
                        {"origin", c.origin},
                        {"status", statusName(c.status)},
                        {"predicted", c.predicted},
                        {"compile_s", c.compileSeconds},
                        {"samples_ms", numbers(c.samplesMs)},
                        {"final_samples_ms", numbers(c.finalSamplesMs)},
                        {"ratios", numbers(c.ratios)},
                        {"final_ratios", numbers(c.finalRatios)},
                        {"rounds", c.rounds},
                        {"knobs", knobsOf(c.schedule)}};
    if (c.measured())
      object["median_ms"] = median(c.samplesMs);
    if (!c.reason.empty())
      object["reason"] = c.reason;
    candidates.push_back(std::move(object));
  }
  json::Array best;
  for (const auto &[t, ratio] : session.bestOverTime)
    best.push_back(json::Array{t, ratio});
  double built = 0, compileSeconds = 0;
  for (const Candidate &c : session.candidates)
    if (c.compileSeconds > 0)
      ++built, compileSeconds += c.compileSeconds;
  json::Object report{{"format", 1},
                      {"layer", session.layer},
                      {"fingerprint", session.fingerprint},
                      {"sizes", session.sizes},
                      {"cpu", session.cpu},
                      {"target", session.target},
                      {"threads", session.threads},
                      {"compiler", session.compiler},
                      {"seed", static_cast<int64_t>(session.seed)},
                      {"budget_s", session.budgetSeconds},
                      {"elapsed_s", session.elapsedSeconds},
                      {"default_id", session.defaultId},
                      {"winner_id", session.winnerId},
                      {"adopted", session.adopted},
                      {"speedup", session.speedup},
                      {"noise", session.noise},
                      {"candidates_per_minute",
                       session.elapsedSeconds > 0 ? built * 60 / session.elapsedSeconds : 0.0},
                      {"mean_compile_s", built > 0 ? compileSeconds / built : 0.0},
                      {"best_over_time", std::move(best)},
                      {"candidates", std::move(candidates)}};
  return llvm::formatv("{0:2}", json::Value(std::move(report))).str() + "\n";
}

std::string reportHTML(const TuneSession &session) {
  size_t measured = 0, failed = 0;
  for (const Candidate &c : session.candidates) {
    measured += c.measured();
    failed += c.failed();
  }
  std::string verdict =
      session.adopted
          ? fmt::format("The winner, #{}, is {:.3f}x the default's speed (noise {:.1f}%): its "
                        "schedule was written.",
                        session.winnerId, session.speedup, 100 * session.noise)
          : fmt::format("No candidate beat the default by more than the noise ({:.1f}%; the "
                        "best was {:.3f}x): the default's schedule was written.",
                        100 * session.noise, session.speedup);
  return fmt::format(
      R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>mhac tune: {0}</title>
<style>body{{font-family:sans-serif;max-width:720px;margin:2em auto}}td{{padding:0 8px}}</style>
</head><body>
<h1>mhac tune: layer {0}</h1>
<p>{1}<br>sizes {2}; {3} thread(s); CPU {4}; {5}; seed {6}.<br>
{7} candidates: {8} measured, {9} failed, in {10:.0f} s of a {11:.0f} s budget.</p>
<p><b>{12}</b></p>
<h2>Best so far, over time</h2>{13}
<h2>Every candidate against the default</h2>{14}
<h2>What each knob bought</h2>{15}
<h2>Predicted against measured</h2>{16}
<p>The data: the .tune.json file beside this one.</p>
</body></html>
)",
      escapeHTML(session.layer), escapeHTML(session.fingerprint), escapeHTML(session.sizes),
      session.threads, escapeHTML(session.cpu), escapeHTML(session.compiler), session.seed,
      session.candidates.size(), measured, failed, session.elapsedSeconds, session.budgetSeconds,
      escapeHTML(verdict), bestOverTimePlot(session), candidatesPlot(session), knobTable(session),
      predictedPlot(session));
}

} // namespace mhac
