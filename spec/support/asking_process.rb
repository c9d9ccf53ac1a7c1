# frozen_string_literal: true

# Another process that asks on a chat record, for the specs of claims held by other
# processes (spec/active_record/rerun_after_kill_spec.rb): the models as an app
# declares them, the spec's database and FakeProvider.
#
#   ruby spec/support/asking_process.rb JSON   # database:, chat_id:, prompt:, key:, base_url:, options:
#
# It prints "streaming" at the first chunk it is given and "answered TEXT" at the end.
require "json"

args = JSON.parse(ARGV.fetch(0), symbolize_names: true)
$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
$stdout.sync = true
require "llm_failover"
require "llm_failover/active_record"

ActiveRecord::Base.logger = nil
database = args.fetch(:database)
ActiveRecord::Base.establish_connection(database)
if database[:adapter] == "sqlite3"
  # As spec/active_record/ar_spec_helper.rb does: wait for SQLite's write lock with
  # the GVL released, the heartbeat's thread beside the call's.
  require "active_record/connection_adapters/sqlite3_adapter"
  ActiveRecord::ConnectionAdapters::SQLite3Adapter.set_callback(:checkout, :after) do |connection|
    connection.raw_connection.busy_handler_timeout = 10_000
  end
end

class Chat < ActiveRecord::Base
  acts_as_llm_chat
end

class Message < ActiveRecord::Base
  acts_as_llm_message
end

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "sk-test-asking-process", base_url: args.fetch(:base_url)
  args.fetch(:options, {}).each { |name, value| c.public_send(:"#{name}=", value) }
end

streaming = false
reply = Chat.find(args.fetch(:chat_id)).ask(args.fetch(:prompt), idempotency_key: args.fetch(:key)) do |_chunk|
  puts "streaming" unless streaming
  streaming = true
end
puts "answered #{reply.content}"
