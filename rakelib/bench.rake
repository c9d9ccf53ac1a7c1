# frozen_string_literal: true

# Benchmarks: figures printed, never asserted. See bench/README.md.
desc "Benchmark llm_failover against a libcurl floor, net/http, Faraday and ruby_llm (starts nginx)"
task bench: :compile do
  ruby "bench/run.rb"
end

namespace :bench do
  desc "RSS after 1k calls against RSS after 100k (MEMORY_N to change; takes a minute or more)"
  task memory: :compile do
    ruby "bench/run.rb", "memory"
  end
end
