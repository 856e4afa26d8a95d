// End to end: the real `bertology` binary (from $BERTOLOGY_BIN_DIR) against
// the real bertology-server on a free port with the golden tiny checkpoint
// (3 layers x 4 heads, labels negative/neutral/positive). Checks what shell
// scripts rely on: exit codes, messages, and the files --out-dir writes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cli_process.h"
#include "tests/integration/golden_server_cli_test.h"
#include "tests/integration/server_process.h"

namespace bertology {
namespace client {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::Contains;
using testing::Describe;
using testing::GoldenModelDir;
using testing::ReadFile;
using testing::RunCli;
using testing::ServerProcess;

using CliE2eTest = testing::GoldenServerCliTest;

TEST_F(CliE2eTest, HealthInfoClassify) {
  CliResult health = Run("health", {});
  EXPECT_EQ(health.exit_code, 0) << Describe(health);
  EXPECT_TRUE(Contains(health.out, "SERVING")) << Describe(health);

  CliResult info = Run("info", {});
  ASSERT_EQ(info.exit_code, 0) << Describe(info);
  nlohmann::json j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["models"][0]["name"], "tiny");
  EXPECT_EQ(j["models"][0]["layers"], 3);
  EXPECT_EQ(j["models"][0]["heads"], 4);

  CliResult classify = Run(
      "classify", {"--text-a=the cat sat", "--text-b=on the mat", "--json"});
  ASSERT_EQ(classify.exit_code, 0) << Describe(classify);
  nlohmann::json p = nlohmann::json::parse(classify.out);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["probabilities"].size(), 3u);
  const std::vector<std::string> labels = j["models"][0]["labels"];
  EXPECT_NE(std::find(labels.begin(), labels.end(), p[0]["label_name"]),
            labels.end());
}

TEST_F(CliE2eTest, AttentionOutDirWritesPageAndSvgs) {
  const fs::path dir = dir_ / "attention";
  CliResult r =
      Run("attention", {"--text-a=the cat was here", "--text-b=it is not",
                        "--layer=0,2", "--head=1", "--out-dir", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::string html = ReadFile(dir / "attention.html");
  for (const char* token : {"[CLS]", "[SEP]", "the", "##a", "here", "not"}) {
    EXPECT_TRUE(Contains(html, token)) << token;
  }
  // Self-contained: nothing loaded from the network (xmlns URIs are fine).
  for (const char* fetch : {"src=\"http", "href=\"http", "@import"}) {
    EXPECT_FALSE(Contains(html, fetch)) << fetch;
  }
  for (const char* svg : {"attention_L0_H1.svg", "attention_L2_H1.svg"}) {
    EXPECT_TRUE(Contains(ReadFile(dir / svg), "<svg")) << svg;
  }
  EXPECT_FALSE(fs::exists(dir / "attention_L1_H1.svg"));
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir / "attention.json"));
  const int n = j["size"];
  ASSERT_EQ(j["maps"].size(), 2u);
  EXPECT_EQ(j["maps"][1]["layer"], 2);
  EXPECT_EQ(j["maps"][0]["attention"].size(), static_cast<size_t>(n));
  EXPECT_EQ(j["maps"][0]["attention"][0].size(), static_cast<size_t>(n));
  EXPECT_TRUE(j.contains("prediction"));
  EXPECT_TRUE(Contains(r.out, "attention.html")) << Describe(r);

  // float16 maps decode to the same picture (within half precision).
  const fs::path half = dir_ / "half";
  r = Run("attention", {"--text-a=the cat was here", "--layer=1", "--head=3",
                        "--float16", "--out-dir", half.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(fs::exists(half / "attention_L1_H3.svg"));
}

// A small TSV labelled with the model's own label names.
fs::path WriteDataset(const fs::path& dir, const std::string& bad_row = "") {
  const fs::path path = dir / "dev.tsv";
  std::ofstream out(path);
  out << "sentence1\tsentence2\tlabel\n"
      << "the cat was here\tit is not\tpositive\n"
      << "she said no\tthey were out\tnegative\n"
      << bad_row << "a dog and a cat\tthe dog is in\tneutral\n"
      << "we will go\tyou can not\tpositive\n"
      << "this is it\tthat was all\tnegative\n";
  return path;
}

TEST_F(CliE2eTest, SweepOutDirWritesReportsFiguresAndSummary) {
  const fs::path& dir = dir_;
  const fs::path data = WriteDataset(dir);
  const fs::path out = dir / "sweep";
  CliResult r = Run(
      "sweep", {"--data", data.string(), "--text-a=sentence1",
                "--text-b=sentence2", "--label=label", "--heads", "--layers",
                "--random=0.5,2,1", "--quiet", "--out-dir", out.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::string csv = ReadFile(out / "sweep_results.csv");
  EXPECT_TRUE(Contains(csv, "head-L2H3")) << csv;
  EXPECT_TRUE(Contains(csv, "layer-1")) << csv;
  EXPECT_TRUE(Contains(csv, "random-L0-3-k6-s1-r1")) << csv;
  nlohmann::json j =
      nlohmann::json::parse(ReadFile(out / "sweep_results.json"));
  EXPECT_EQ(j["num_layers"], 3);
  EXPECT_EQ(j["results"].size(), 12u + 3u + 2u);
  EXPECT_EQ(j["baseline"]["examples"], 5);
  for (const char* svg :
       {"heads_heatmap.svg", "layer_bars.svg", "fraction_curve.svg"}) {
    EXPECT_TRUE(Contains(ReadFile(out / svg), "<svg")) << svg;
  }
  // The summary table on stdout.
  for (const char* part :
       {"Baseline accuracy", "single heads", "Whole layers masked",
        "Random masks", "all layers", "heads_heatmap.svg"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << Describe(r);
  }
}

// Mean ablation the way the README shows it: statistics over a reference
// file, then a single-head sweep in mode mean by id and by --reference.
TEST_F(CliE2eTest, StatisticsThenMeanAblationSweep) {
  const fs::path data = WriteDataset(dir_);
  const std::vector<std::string> columns = {"--text-a=sentence1",
                                            "--text-b=sentence2"};
  std::vector<std::string> stats_args = {"--reference", data.string(),
                                         "--json"};
  stats_args.insert(stats_args.end(), columns.begin(), columns.end());
  CliResult stats = Run("statistics", stats_args);
  ASSERT_EQ(stats.exit_code, 0) << Describe(stats);
  nlohmann::json s = nlohmann::json::parse(stats.out);
  const std::string id = s["id"];
  EXPECT_EQ(id.rfind("hs-", 0), 0u) << id;
  EXPECT_EQ(s["examples"], 5);
  EXPECT_GT(s["tokens"].get<int>(), 5 * 3);
  // The same inputs again: the same id, already held; `info` lists it.
  stats = Run("statistics", stats_args);
  ASSERT_EQ(stats.exit_code, 0) << Describe(stats);
  EXPECT_EQ(nlohmann::json::parse(stats.out)["id"], id);
  EXPECT_EQ(nlohmann::json::parse(stats.out)["already_held"], true);
  CliResult info = Run("info", {});
  ASSERT_EQ(info.exit_code, 0) << Describe(info);
  EXPECT_TRUE(Contains(info.out, id)) << info.out;

  auto sweep = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--data",  data.string(), "--label=label",       "--heads",
        "--quiet", "--out-dir",   (dir_ / name).string()};
    args.insert(args.end(), columns.begin(), columns.end());
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = Run("sweep", args);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return nlohmann::json::parse(ReadFile(dir_ / name / "sweep_results.json"));
  };
  const nlohmann::json zero = sweep("zero", {});
  const nlohmann::json mean =
      sweep("mean", {"--mode=mean", "--statistics=" + id});
  std::vector<std::string> by_file = {"--mode=mean", "--reference",
                                      data.string()};
  const nlohmann::json mean_by_file = sweep("mean_by_file", by_file);
  ASSERT_EQ(zero["results"].size(), 12u);
  ASSERT_EQ(mean["results"].size(), 12u);
  ASSERT_EQ(mean_by_file["results"].size(), 12u);
  EXPECT_EQ(mean["baseline"]["loss_sum"], zero["baseline"]["loss_sum"]);
  int differ = 0;
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(mean["results"][i]["mask_id"], zero["results"][i]["mask_id"]);
    // The id and the file name the same statistics: the same numbers.
    EXPECT_EQ(mean["results"][i]["loss_sum"],
              mean_by_file["results"][i]["loss_sum"])
        << i;
    differ += mean["results"][i]["loss_sum"] != zero["results"][i]["loss_sum"];
  }
  // A head's mean output is not zero: the sweeps differ (the modes reach
  // the model).
  EXPECT_GE(differ, 6);
  EXPECT_TRUE(Contains(ReadFile(dir_ / "mean" / "heads_heatmap.svg"), "<svg"));

  // Role means and resample through the same command: every result has
  // its interval; resample's has its draws (each example once per draw,
  // the accuracy their mean) and refuses to run outside a sweep.
  const nlohmann::json role =
      sweep("role", {"--mode=mean_by_role", "--statistics=" + id});
  const nlohmann::json resample =
      sweep("resample", {"--mode=resample", "--statistics=" + id, "--draws=3",
                         "--seed=2", "--alignment=scaled"});
  ASSERT_EQ(role["results"].size(), 12u);
  ASSERT_EQ(resample["results"].size(), 12u);
  int role_differs = 0;
  for (size_t i = 0; i < 12; ++i) {
    role_differs +=
        role["results"][i]["loss_sum"] != mean["results"][i]["loss_sum"];
    const nlohmann::json& r = resample["results"][i];
    EXPECT_EQ(r["draws"], 3);
    EXPECT_EQ(r["scored"], 15);
    ASSERT_TRUE(r["accuracy_delta_ci"].is_array()) << r;
    EXPECT_LE(r["accuracy_delta_ci"][0].get<double>(),
              r["accuracy_delta"].get<double>() + 1e-12);
    EXPECT_GE(r["accuracy_delta_ci"][1].get<double>(),
              r["accuracy_delta"].get<double>() - 1e-12);
  }
  EXPECT_GE(role_differs, 6);
  EXPECT_TRUE(resample["baseline"]["accuracy_delta_ci"].is_null());
  CliResult no_resample =
      Run("classify", {"--text-a=the cat", "--mode=resample",
                       "--statistics=" + id, "--ablate=0:1"});
  EXPECT_NE(no_resample.exit_code, 0) << Describe(no_resample);
  EXPECT_TRUE(Contains(no_resample.err, "head_mask.mode=resample"))
      << Describe(no_resample);

  // Mean ablation without statistics is a usage error; an id the server
  // does not hold is refused by it.
  CliResult bad = Run("sweep", {"--data", data.string(), "--text-a=sentence1",
                                "--text-b=sentence2", "--label=label",
                                "--heads", "--mode=mean"});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
  EXPECT_TRUE(Contains(bad.err, "--statistics")) << Describe(bad);
  bad = Run("classify", {"--text-a=the cat", "--mode=mean",
                         "--statistics=hs-00", "--ablate=0:1"});
  EXPECT_EQ(bad.exit_code, 1) << Describe(bad);
  EXPECT_TRUE(Contains(bad.err, "hs-00")) << Describe(bad);
  // Importance in mode mean (toward the statistics) differs from zero's;
  // resample it refuses.
  std::vector<std::string> importance = {"--data", data.string(),
                                         "--label=label"};
  importance.insert(importance.end(), columns.begin(), columns.end());
  CliResult imp_zero = Run("importance", importance);
  ASSERT_EQ(imp_zero.exit_code, 0) << Describe(imp_zero);
  importance.push_back("--mode=mean");
  importance.push_back("--statistics=" + id);
  CliResult imp_mean = Run("importance", importance);
  ASSERT_EQ(imp_mean.exit_code, 0) << Describe(imp_mean);
  EXPECT_TRUE(Contains(imp_mean.out, "layer,head,importance")) << imp_mean.out;
  EXPECT_NE(imp_mean.out, imp_zero.out);
  // Prune toward the means: the curve's JSON, from the statistics id and
  // from the reference file alike.
  std::vector<std::string> prune = {"--data", data.string(), "--label=label",
                                    "--mode=mean", "--step=0.25"};
  prune.insert(prune.end(), columns.begin(), columns.end());
  std::vector<std::string> prune_by_id = prune;
  prune_by_id.insert(prune_by_id.end(), {"--statistics=" + id, "--out-dir",
                                         (dir_ / "p1").string()});
  CliResult pruned = Run("prune", prune_by_id);
  ASSERT_EQ(pruned.exit_code, 0) << Describe(pruned);
  std::vector<std::string> prune_by_file = prune;
  prune_by_file.insert(
      prune_by_file.end(),
      {"--reference", data.string(), "--out-dir", (dir_ / "p2").string()});
  pruned = Run("prune", prune_by_file);
  ASSERT_EQ(pruned.exit_code, 0) << Describe(pruned);
  EXPECT_EQ(ReadFile(dir_ / "p1" / "prune_curve.csv"),
            ReadFile(dir_ / "p2" / "prune_curve.csv"));
  EXPECT_TRUE(Contains(ReadFile(dir_ / "p1" / "prune_curve.csv"), "\n1,"));
  bad = Run("importance", {"--data", data.string(), "--text-a=sentence1",
                           "--text-b=sentence2", "--label=label",
                           "--mode=resample", "--statistics=" + id});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
  EXPECT_TRUE(Contains(bad.err, "zero, uniform or mean")) << Describe(bad);
}

TEST_F(CliE2eTest, PatchWritesTableJsonCsvAndHeatmap) {
  const fs::path out = dir_ / "patch";
  CliResult r =
      Run("patch", {"--clean=the cat was here", "--corrupted=the dog was here",
                    "--top=5", "--quiet", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  nlohmann::json j = nlohmann::json::parse(ReadFile(out / "patch.json"));
  ASSERT_EQ(j["results"].size(), 12u);
  EXPECT_EQ(j["plan"]["num_sites"], 12);
  EXPECT_EQ(j["plan"]["direction"], "clean-into-corrupted");
  EXPECT_EQ(j["results"][5]["layer"], 1);
  EXPECT_EQ(j["results"][5]["head"], 1);
  const std::string csv = ReadFile(out / "patch.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 12) << csv;
  EXPECT_TRUE(Contains(ReadFile(out / "patch_heads.svg"), "<svg"));
  EXPECT_TRUE(Contains(r.out, "ranked by |normalized_effect|")) << r.out;

  // Noising (corrupted into clean): a site that does not matter leaves the
  // clean run as it is (effect ~ 1), so the table ranks by |1 - effect|
  // and says so; its first site is the one furthest from 1 in patch.json.
  const fs::path noise = dir_ / "patch_noising";
  r = Run("patch", {"--clean=the cat was here", "--corrupted=the dog was here",
                    "--direction=corrupted-into-clean", "--top=3", "--quiet",
                    "--out", noise.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, "ranked by |1 - normalized_effect|")) << r.out;
  j = nlohmann::json::parse(ReadFile(noise / "patch.json"));
  EXPECT_EQ(j["plan"]["direction"], "corrupted-into-clean");
  std::string furthest;
  double best = -1;
  for (const auto& site : j["results"]) {
    if (site["normalized_effect"].is_null()) continue;
    const double score =
        std::abs(1.0 - site["normalized_effect"].get<double>());
    if (score > best) {
      best = score;
      furthest = "L" + std::to_string(site["layer"].get<int>()) + "H" +
                 std::to_string(site["head"].get<int>());
    }
  }
  ASSERT_FALSE(furthest.empty()) << r.out;
  EXPECT_TRUE(Contains(r.out, "\n1     " + furthest + " ")) << r.out;

  // Per token: layers x heads x tokens sites and the other figure.
  const fs::path out2 = dir_ / "patch_positions";
  r = Run("patch",
          {"--clean=the cat was here", "--corrupted=the dog was here",
           "--sites=head-positions", "--quiet", "--out", out2.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  j = nlohmann::json::parse(ReadFile(out2 / "patch.json"));
  const int tokens = j["plan"]["num_tokens"];
  EXPECT_EQ(j["results"].size(), static_cast<size_t>(12 * tokens));
  EXPECT_TRUE(Contains(ReadFile(out2 / "patch_head_positions.svg"), "<svg"));

  // Causal tracing: the residual stream entering each layer and the
  // encoder output, per token. At the encoder output only [CLS] is read by
  // the classifier: patching it gives the clean score, any other token
  // leaves the corrupted one.
  const fs::path out3 = dir_ / "patch_residual";
  r = Run("patch",
          {"--clean=the cat was here", "--corrupted=the dog was here",
           "--sites=residual-positions", "--quiet", "--out", out3.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  j = nlohmann::json::parse(ReadFile(out3 / "patch.json"));
  ASSERT_EQ(j["results"].size(), static_cast<size_t>(4 * tokens));
  const double clean = j["plan"]["clean_logit_diff"];
  const double corrupted = j["plan"]["corrupted_logit_diff"];
  ASSERT_GT(std::abs(clean - corrupted), 1e-3);
  for (const auto& site : j["results"]) {
    EXPECT_EQ(site["kind"], "residual");
    if (site["layer"] != 3) continue;
    const double want = site["position"] == 0 ? clean : corrupted;
    EXPECT_NEAR(site["logit_diff"].get<double>(), want, 1e-4) << site;
  }
  EXPECT_TRUE(
      Contains(ReadFile(out3 / "patch_residual_positions.svg"), "<svg"));

  // Inputs of different lengths: refused by the server, naming both.
  r = Run("patch", {"--clean=the cat was here",
                    "--corrupted=the dog was not here at all"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "tokens")) << Describe(r);
}

// A single-head sweep of WriteDataset's file in shards of 2 masks x 3
// examples: the flags every part and merge of one sweep must share.
std::vector<std::string> ShardedSweepFlags(const fs::path& data) {
  return {"--data",
          data.string(),
          "--text-a=sentence1",
          "--text-b=sentence2",
          "--label=label",
          "--heads",
          "--masks-per-shard=2",
          "--examples-per-shard=3"};
}

// The Indexed Job path as deploy/k8s/sweep runs it: each part with
// --part=I/N into its own progress file, serving its progress on
// --metrics-listen; then the merge with --merge-from over a glob of the
// parts. The merged CSV must be the plain run's, byte for byte.
TEST_F(CliE2eTest, IndexedJobPartsMergeToThePlainRun) {
  const fs::path data = WriteDataset(dir_);
  std::vector<std::string> sweep = ShardedSweepFlags(data);
  sweep.insert(sweep.end(), {"--layers", "--quiet"});
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = sweep;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  CliResult plain =
      Run("sweep", with({"--out-csv", (dir_ / "plain.csv").string()}));
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);

  // Part 1 of 3, watched through its metrics while it lingers.
  const int port = testing::FreePort();
  CliResult part1;
  std::thread lingering([&] {
    part1 = Run("sweep",
                with({"--part=1/3",
                      "--progress-file=" + (dir_ / "part-1.jsonl").string(),
                      absl::StrCat("--metrics-listen=127.0.0.1:", port),
                      "--metrics-linger=3"}));
  });
  std::string metrics;
  for (int i = 0; i < 200; ++i) {
    auto m = testing::FetchMetricsAt(port);
    if (m.ok() && Contains(*m, "bertology_sweep_job_shards_done") &&
        Contains(*m, "bertology_sweep_job_pairs_done{part=\"1/3\"")) {
      metrics = *m;
      // Done when the gauges agree; the part lingers 3 s after that.
      const std::regex done(R"(shards_done\{[^}]*\} (\d+))");
      const std::regex total(R"(shards_total\{[^}]*\} (\d+))");
      std::smatch a, b;
      if (std::regex_search(metrics, a, done) &&
          std::regex_search(metrics, b, total) && a[1] == b[1] && a[1] != "0") {
        break;
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  lingering.join();
  ASSERT_EQ(part1.exit_code, 0) << Describe(part1);
  EXPECT_TRUE(
      Contains(metrics, "bertology_sweep_job_shards_total{part=\"1/3\""))
      << metrics;
  // 15 masks in 8 shards of 2 over 2 example chunks: 16 shards, part 1 has
  // indices 1, 4, 7, 10, 13.
  EXPECT_TRUE(std::regex_search(
      metrics, std::regex(R"(shards_total\{[^}]*part="1/3"[^}]*\} 5\n)")))
      << metrics;

  for (const char* part : {"0/3", "2/3"}) {
    const std::string index(1, part[0]);
    CliResult r = Run(
        "sweep", with({absl::StrCat("--part=", part),
                       "--progress-file=" +
                           (dir_ / ("part-" + index + ".jsonl")).string()}));
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
  }
  CliResult merged =
      Run("sweep", with({"--merge-from=" + (dir_ / "part-*.jsonl").string(),
                         "--out-csv", (dir_ / "merged.csv").string()}));
  ASSERT_EQ(merged.exit_code, 0) << Describe(merged);
  EXPECT_EQ(ReadFile(dir_ / "merged.csv"), ReadFile(dir_ / "plain.csv"));

  // A part without --masks-per-shard could plan other shards: refused.
  CliResult bad =
      Run("sweep", {"--data", data.string(), "--text-a=sentence1",
                    "--text-b=sentence2", "--label=label", "--heads",
                    "--part=0/2", "--progress-file=x.jsonl"});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
  EXPECT_TRUE(Contains(bad.err, "--masks-per-shard")) << Describe(bad);
}

// A sweep Job's path through real servers: the parts' folder does not
// exist yet (a fresh volume); a part written against one replica is merged
// through another serving a copy of the model (cp -R: same bytes, another
// mtime); a replica serving other weights under the same name is refused
// by address while the others finish the sweep.
TEST_F(CliE2eTest, PartsSurviveAFreshVolumeCopiedModelsAndAForeignReplica) {
  const fs::path copy = dir_ / "copy";
  const fs::path edited = dir_ / "edited";
  for (const fs::path& d : {copy, edited}) {
    fs::copy(GoldenModelDir(), d, fs::copy_options::recursive);
    fs::last_write_time(
        d / "model.safetensors",
        fs::file_time_type::clock::now() + std::chrono::hours(1));
  }
  {
    // One weight changes (the last byte is tensor data); the file loads.
    std::fstream f(edited / "model.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x3f');
  }
  auto copied = ServerProcess::Start({"--model=tiny=" + copy.string()});
  auto foreign = ServerProcess::Start({"--model=tiny=" + edited.string()});
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  ASSERT_TRUE((*copied)->WaitServing().ok()) << (*copied)->Log();
  ASSERT_TRUE((*foreign)->WaitServing().ok()) << (*foreign)->Log();

  const fs::path data = WriteDataset(dir_);
  const std::vector<std::string> sweep = ShardedSweepFlags(data);
  auto run = [&](const std::string& target, std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep", "--target=" + target};
    args.insert(args.end(), sweep.begin(), sweep.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  };
  CliResult plain = run(server_->address(), {"--quiet", "--out-csv",
                                             (dir_ / "plain.csv").string()});
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);

  const fs::path parts = dir_ / "fresh-volume" / "run";
  ASSERT_FALSE(fs::exists(parts.parent_path()));
  CliResult part0 =
      run(server_->address(),
          {"--quiet", "--part=0/2",
           "--progress-file=" + (parts / "part-0.progress.jsonl").string()});
  ASSERT_EQ(part0.exit_code, 0) << Describe(part0);
  CliResult part1 =
      run((*copied)->address(),
          {"--quiet", "--part=1/2",
           "--progress-file=" + (parts / "part-1.progress.jsonl").string()});
  ASSERT_EQ(part1.exit_code, 0) << Describe(part1);
  CliResult merged = run(
      (*copied)->address(),
      {"--quiet", "--merge-from=" + (parts / "part-*.progress.jsonl").string(),
       "--out-csv", (dir_ / "merged.csv").string()});
  ASSERT_EQ(merged.exit_code, 0) << Describe(merged);
  EXPECT_EQ(ReadFile(dir_ / "merged.csv"), ReadFile(dir_ / "plain.csv"));

  // Other weights under the same name are another sweep: the parts are
  // refused by a merge through that replica.
  CliResult other =
      run((*foreign)->address(),
          {"--quiet",
           "--merge-from=" + (parts / "part-*.progress.jsonl").string()});
  EXPECT_NE(other.exit_code, 0) << Describe(other);
  EXPECT_TRUE(Contains(other.err, "another sweep")) << Describe(other);

  // The sweep's identity is the first replica's; the foreign one serves
  // none of the results (whether it is asked before the other finishes
  // depends on the threads; scheduler_test pins the refusal itself).
  CliResult listed = run(server_->address() + "," + (*foreign)->address(),
                         {"--out-csv", (dir_ / "listed.csv").string()});
  ASSERT_EQ(listed.exit_code, 0) << Describe(listed);
  EXPECT_EQ(ReadFile(dir_ / "listed.csv"), ReadFile(dir_ / "plain.csv"));
  EXPECT_TRUE(Contains(listed.err, (*foreign)->address() + ": 0 shards"))
      << Describe(listed);
}

TEST_F(CliE2eTest, UsageErrorsExit2) {
  CliResult r = Run("classify", {"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "unknown flag --no-such-flag")) << Describe(r);
  r = RunCli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "unknown command 'frobnicate'")) << Describe(r);
  r = Run("sweep", {"--data=x.tsv"});  // no masks
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
}

TEST_F(CliE2eTest, BadDatasetRowExits3NamingTheLine) {
  const fs::path& dir = dir_;
  const fs::path data = WriteDataset(dir, "oops\tbad\tno-such-label\n");
  CliResult r = Run(
      "sweep", {"--data", data.string(), "--text-a=sentence1",
                "--text-b=sentence2", "--label=label", "--layers", "--quiet"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_TRUE(Contains(r.err, data.string() + ":4")) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "no-such-label")) << Describe(r);
}

TEST(CliE2eNoServerTest, UnreachableTargetExits1) {
  // Port 1 on loopback: nothing listens there, the connect fails at once.
  for (const char* command : {"health", "info"}) {
    CliResult r = RunCli({command, "--target=127.0.0.1:1", "--timeout=3"});
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << Describe(r);
    EXPECT_TRUE(Contains(r.err, absl::StrCat("bertology ", command, ": ")))
        << Describe(r);
  }
}

TEST(CliE2eNoServerTest, HelpOnEverySubcommandExits0) {
  CliResult top = RunCli({"--help"});
  EXPECT_EQ(top.exit_code, 0) << Describe(top);
  for (const char* command :
       {"info", "tokenize", "classify", "attention", "sweep", "health"}) {
    CliResult r = RunCli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << Describe(r);
    EXPECT_TRUE(Contains(r.out, "Usage: bertology")) << Describe(r);
    EXPECT_TRUE(Contains(r.out, "--target")) << Describe(r);
  }
  EXPECT_TRUE(Contains(RunCli({"sweep", "--help"}).out, "--out-dir"));
  EXPECT_TRUE(Contains(RunCli({"attention", "--help"}).out, "--out-dir"));
}

}  // namespace
}  // namespace client
}  // namespace bertology
