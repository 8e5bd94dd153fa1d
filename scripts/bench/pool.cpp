// A worker pool for `scripts/bench_record.sh`: THREADS std::threads take
// jobs from one queue guarded by a std::mutex and a std::condition_variable.
// Each job copies and sorts its own chunk of a shared, read-only input and
// hashes it (ROUNDS rounds of FNV-style mixing per element, in registers:
// compute beside the sort's memory traffic); the results are gathered with
// std::atomic counters and a per-job slot written by the one worker that
// ran the job. Race-free: the input is written before the threads start,
// each slot by one worker, and main reads the slots after joining. Prints a
// checksum, the same for every build.
//
//   g++ -std=c++17 -O2 pool.cpp -o pool -pthread
//   ./pool [THREADS JOBS CHUNK ROUNDS]      (default 4 512 2048 400)
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace {

class Pool {
public:
    Pool(unsigned n, std::function<void(std::size_t)> run) : run_(std::move(run)) {
        for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> g(m_);
            done_ = true;
        }
        cv_.notify_all();
        for (auto &t : workers_) t.join();
    }
    void submit(std::size_t job) {
        {
            std::lock_guard<std::mutex> g(m_);
            jobs_.push_back(job);
        }
        cv_.notify_one();
    }
private:
    void work() {
        for (;;) {
            std::size_t job;
            {
                std::unique_lock<std::mutex> l(m_);
                cv_.wait(l, [this] { return done_ || !jobs_.empty(); });
                if (jobs_.empty()) return;
                job = jobs_.front();
                jobs_.pop_front();
            }
            run_(job);
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::size_t> jobs_;
    bool done_ = false;
    std::function<void(std::size_t)> run_;
    std::vector<std::thread> workers_;
};

}  // namespace

int main(int argc, char **argv) {
    unsigned threads = argc > 1 ? std::atoi(argv[1]) : 4;
    std::size_t jobs = argc > 2 ? std::atol(argv[2]) : 512;
    std::size_t chunk = argc > 3 ? std::atol(argv[3]) : 2048;
    int rounds = argc > 4 ? std::atoi(argv[4]) : 400;
    std::vector<std::uint32_t> input(jobs * chunk);
    std::uint64_t x = 88172645463325252ull;
    for (auto &v : input) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v = static_cast<std::uint32_t>(x);
    }
    std::vector<std::uint64_t> slot(jobs);
    std::atomic<std::size_t> finished{0};
    std::atomic<std::uint64_t> total{0};
    {
        Pool pool(threads, [&](std::size_t j) {
            std::vector<std::uint32_t> mine(input.begin() + j * chunk,
                                            input.begin() + (j + 1) * chunk);
            std::sort(mine.begin(), mine.end());
            std::uint64_t h = 1469598103934665603ull;
            for (auto v : mine) {
                // Work in registers: one read of the chunk per element.
                for (int r = 0; r < rounds; ++r) {
                    h ^= v + r;
                    h *= 1099511628211ull;
                    h ^= h >> 29;
                }
            }
            slot[j] = h;
            total.fetch_add(h & 0xffff, std::memory_order_relaxed);
            finished.fetch_add(1, std::memory_order_release);
        });
        for (std::size_t j = 0; j < jobs; ++j) pool.submit(j);
    }
    std::uint64_t sum = 0;
    for (auto h : slot) sum ^= h;
    std::printf("%zu jobs, checksum %016llx, total %llu\n", finished.load(),
                static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(total.load()));
    return finished.load() == jobs ? 0 : 1;
}
