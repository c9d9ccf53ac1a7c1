# frozen_string_literal: true

# Configures one provider and asks it, in a process of its own, with the credential gems
# the plan names loaded first (aws-sdk-core, googleauth): the gem picks its credential
# source by what is loaded, and the spec process itself never loads them.
#   ruby spec/support/cloud_credentials_runner.rb PLAN.json
# PLAN: { "require": [...], "provider": { options }, "model": "...", "calls": 2 }.
# Prints one JSON line per call: { "provider": ... } or { "error": class, "message": ...,
# "full_message": with its causes }, then { "inspect": the configuration and the provider
# as #inspect and pp show them, "loaded": the credential gems loaded }.
$LOAD_PATH.unshift(File.expand_path("../../lib", __dir__))
require "json"
require "pp"

plan = JSON.parse(File.read(ARGV.fetch(0)))
plan.fetch("require", []).each { |lib| require lib }
# googleauth parses with multi_json, whose json adapter passes JSON.parse an options Hash
# that json 3 refuses (intridea/multi_json#227); the fixed multi_json needs Ruby 3.2. Its
# own pure-Ruby parser reads the same answers.
MultiJson.use(:ok_json) if defined?(MultiJson) && Gem::Version.new(JSON::VERSION) >= Gem::Version.new("3")
require "llm_failover"

options = plan.fetch("provider").transform_keys(&:to_sym)
options[:api] = options[:api].to_sym
options[:credentials] = options[:credentials].transform_keys(&:to_sym) if options[:credentials].is_a?(Hash)
$stdout.sync = true
begin
  LlmFailover.configure do |c|
    c.provider :cloud, **options
    c.max_retries = 0
  end
  plan.fetch("calls", 1).times do
    reply = LlmFailover.chat(model: plan.fetch("model"), provider: :cloud).ask("Hi")
    puts JSON.generate(provider: reply.provider, content: reply.content)
  rescue LlmFailover::Error, LlmFailover::ConfigurationError => e
    puts JSON.generate(error: e.class.name, message: e.message, cause: e.cause&.class&.name,
                       full_message: e.full_message(highlight: false))
  end
rescue LlmFailover::ConfigurationError => e
  puts JSON.generate(error: e.class.name, message: e.message, cause: e.cause&.class&.name,
                     full_message: e.full_message(highlight: false))
end
provider = LlmFailover.configuration.providers[:cloud]
shown = [LlmFailover.configuration.inspect, provider.inspect, provider&.credential.inspect,
         PP.pp(LlmFailover.configuration, +"")].join("\n")
puts JSON.generate(inspect: shown,
                   loaded: $LOADED_FEATURES.grep(%r{/(aws-sdk-core|googleauth)\.rb\z}).map { |f| File.basename(f, ".rb") })
