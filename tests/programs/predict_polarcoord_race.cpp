// PREDICTIVE. The PolarCoord example of the causally-precedes paper in C++:
// setRadius counts the call outside the lock, then writes radius inside it;
// getAngle reads angle inside the lock, then counts the call outside it. In
// the observed run the second thread sleeps first, so its critical section
// follows the first one's and the unlock/lock pair orders the two count++:
// no happens-before race (TSan stays silent). The critical sections touch
// different fields, so a correct reordering runs getAngle's critical section
// first and exposes the race on count: CP and WCP report it.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

struct PolarCoord {
    std::mutex m;
    int radius = 0, angle = 0;
    int count = 0; // counts accesses

    void setRadius(int r) {
        count++; // RACE
        std::lock_guard<std::mutex> g(m);
        radius = r;
    }

    int getAngle() {
        int t;
        {
            std::lock_guard<std::mutex> g(m);
            t = angle;
        }
        count++; // RACE
        return t;
    }
};

static PolarCoord pc;

int main() {
    std::thread a([] { pc.setRadius(10); });
    std::thread b([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150)); // fixes the observed order only
        pc.getAngle();
    });
    a.join();
    b.join();
    std::printf("%d %d\n", pc.radius, pc.count);
    return 0;
}
