// Twin of vptr_race.cpp: the thread making the virtual call is joined before
// the object is destroyed, so the destructor's vptr updates are ordered after
// the call: no race.
#include <cstdio>
#include <new>
#include <thread>

volatile int spoken; // written only by the virtual calls
volatile int noted;  // written only by the destructors

static void note_impl(const void *p) {
    noted += p != nullptr;
}
// Called through a volatile pointer: the compiler cannot see what it does,
// so it must keep the destructors' vptr stores even at -O2.
static void (*volatile note)(const void *) = note_impl;

struct Base {
    virtual void speak() { spoken += 1; }
    virtual ~Base() { note(this); }
};

struct Derived : Base {
    void speak() override { spoken += 2; }
    ~Derived() override { note(this); }
};

alignas(Derived) static unsigned char storage[sizeof(Derived)];

int main() {
    // Read back through a volatile pointer so that no call is devirtualized.
    static Base *volatile shared;
    shared = new (storage) Derived;
    Base *obj = shared;
    std::thread t([] {
        Base *obj = shared;
        obj->speak();
    });
    t.join();
    obj->~Base();
    std::printf("%d %d\n", (int)spoken, (int)noted);
    return 0;
}
