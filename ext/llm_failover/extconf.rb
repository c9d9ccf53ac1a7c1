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

found_curl = pkg_config("libcurl") ||
             (have_header("curl/curl.h") && have_library("curl", "curl_easy_init"))
lf_missing!("libcurl (with headers)", "libcurl4-openssl-dev", "curl") unless found_curl
lf_missing!("curl_multi_poll/curl_multi_wakeup (libcurl >= 7.68)", "libcurl4-openssl-dev", "curl") unless
  have_func("curl_multi_wakeup", "curl/curl.h")

found_json = pkg_config("json-c") ||
             (have_header("json-c/json.h") && have_library("json-c", "json_tokener_parse_ex"))
lf_missing!("json-c (with headers)", "libjson-c-dev", "json-c") unless found_json

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
