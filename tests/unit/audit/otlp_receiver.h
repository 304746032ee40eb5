// The otlp sink tests' receiver: tests/unit/audit/otlp_receiver.py run as a
// child process (it validates every request against the OTLP JSON mapping of
// logs.proto and answers on a schedule), and what it logged.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace sv::test {

class OtlpReceiver {
 public:
  // port 0: any free port (read back from DIR/port).
  OtlpReceiver(std::string dir, std::vector<std::string> args, int port = 0)
      : dir_(std::move(dir)), args_(std::move(args)), port_(port) {}
  ~OtlpReceiver() { stop(); }

  bool start() {
    ::unlink((dir_ + "/port").c_str());
    std::vector<std::string> argv = {SV_PYTHON, SV_OTLP_RECEIVER, "--out",
                                     dir_,      "--port",         std::to_string(port_)};
    argv.insert(argv.end(), args_.begin(), args_.end());
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    if (posix_spawn(&pid_, c[0], nullptr, nullptr, c.data(), environ) != 0) return false;
    for (int i = 0; i < 200; ++i) {
      std::ifstream f(dir_ + "/port");
      if (f >> port_) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/logs"; }

  std::vector<nlohmann::json> requests() const { return read("requests.jsonl"); }
  // {"event", "attributes", "severityNumber", "timeUnixNano"} of each accepted record.
  std::vector<nlohmann::json> records() const { return read("records.jsonl"); }

 private:
  std::vector<nlohmann::json> read(const std::string& name) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ + "/" + name);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) out.push_back(nlohmann::json::parse(l));
    return out;
  }
  std::string dir_;
  std::vector<std::string> args_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace sv::test
