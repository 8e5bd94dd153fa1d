// Twin of std_thread_detach_norace.cpp: the detached thread writes the result
// after reporting completion, so main's read is unordered with the write: a
// race. (A second handshake, a promise fulfilled after the write, keeps main
// from exiting before the write happens; main waits on it only after its
// read, so it orders nothing between the two.)
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

static int result;
static bool done;
static std::mutex m;
static std::condition_variable cv;
static std::promise<void> finished;

int main() {
    std::future<void> fin = finished.get_future();
    std::thread([] {
        {
            std::lock_guard<std::mutex> g(m);
            done = true;
            cv.notify_one();
        }
        result = 42; // RACE
        finished.set_value();
    }).detach();
    int v;
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [] { return done; });
        v = result; // RACE
    }
    fin.wait();
    std::printf("%d\n", v);
    return 0;
}
