// A detached std::thread writes a result and then reports completion under a
// mutex with a condition variable; main waits for that and reads the result.
// The mutex orders the write before the read: no race. (The thread notifies
// while holding the lock, so it never touches the condition variable after
// main can return.)
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

static int result;
static bool done;
static std::mutex m;
static std::condition_variable cv;

int main() {
    std::thread([] {
        result = 42;
        std::lock_guard<std::mutex> g(m);
        done = true;
        cv.notify_one();
    }).detach();
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [] { return done; });
    std::printf("%d\n", result);
    return 0;
}
