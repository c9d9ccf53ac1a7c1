# frozen_string_literal: true

require "mkmf"

# Tells a user exactly what to install instead of leaving them with mkmf's
# "cannot find library" and a stack trace.
def lf_missing!(what, debian_package, dir_option)
  abort <<~MSG

    llm_failover: #{what} was not found.

      On Debian/Ubuntu:   sudo apt-get install #{debian_package}
      Elsewhere:          gem install llm_failover -- --with-#{dir_option}-dir=/path/to/prefix
                          (or --with-#{dir_option}-include=... --with-#{dir_option}-lib=...)

    The compiler's own words are in #{File.expand_path("mkmf.log")}.
  MSG
end

dir_config("curl")
dir_config("json-c")

# The oldest versions CI builds and tests the gem with (Debian 12's): libcurl 7.88.1,
# json-c 0.16. Checked against the headers the build will use.
def lf_at_least?(what, header, macro, minimum)
  checking_for("#{what} >= #{minimum[:name]}") do
    try_compile(<<~C)
      #include <#{header}>
      #if #{macro} < #{minimum[:number]}
      #error too old
      #endif
      int main(void) { return 0; }
    C
  end
end

found_curl = pkg_config("libcurl") ||
             (have_header("curl/curl.h") && have_library("curl", "curl_easy_init"))
lf_missing!("libcurl (with headers)", "libcurl4-openssl-dev", "curl") unless found_curl
lf_missing!("libcurl >= 7.88.1", "libcurl4-openssl-dev", "curl") unless
  lf_at_least?("libcurl", "curl/curl.h", "LIBCURL_VERSION_NUM", name: "7.88.1", number: "0x075801")

found_json = pkg_config("json-c") ||
             (have_header("json-c/json.h") && have_library("json-c", "json_tokener_parse_ex"))
lf_missing!("json-c (with headers)", "libjson-c-dev", "json-c") unless found_json
lf_missing!("json-c >= 0.16", "libjson-c-dev", "json-c") unless
  lf_at_least?("json-c", "json-c/json.h", "JSON_C_VERSION_NUM", name: "0.16", number: "((0 << 16) | (16 << 8))")

have_func("rb_gc_mark_movable", "ruby.h")

# The C core lives in core/ and never includes ruby.h; build it into the same
# shared object.
core_dir = File.join(__dir__, "core")
$srcs = Dir[File.join(__dir__, "*.c")].map { |f| File.basename(f) } +
        Dir[File.join(core_dir, "*.c")].map { |f| File.basename(f) }
$VPATH << "$(srcdir)/core"
$INCFLAGS << " -I$(srcdir)/core"

$CFLAGS << " -std=gnu11 -fvisibility=hidden -Wall -Wno-unused-parameter"
$CFLAGS << " -O0 -g3 -fsanitize=address,undefined -fno-omit-frame-pointer" if ENV["LLM_FAILOVER_SANITIZE"]

create_makefile("llm_failover/llm_failover")

# mkmf makes objects depend on ruby's headers only: an object built against an
# older lf_*.h (a struct that has grown since) would be linked in as it is.
File.open("Makefile", "a") { |f| f.puts "\n$(OBJS): $(wildcard $(srcdir)/*.h $(srcdir)/core/*.h)" }
