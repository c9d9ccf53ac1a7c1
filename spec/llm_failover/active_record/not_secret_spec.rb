# frozen_string_literal: true

require_relative "../../active_record/ar_spec_helper"
require "open3"

RSpec.describe LlmFailover::ActiveRecord::NotSecret, :active_record do
  # Rails 7.2's config/initializers/filter_parameter_logging.rb, as `rails new` writes it.
  rails_defaults = %i[passw email secret token _key crypt salt certificate otp ssn cvv cvc]

  filtered_message = Class.new(Message) do
    def self.name
      "FilteredMessage"
    end
  end

  it "leaves token counts, timings and idempotency keys readable, and real secrets filtered" do
    filter = ActiveSupport::ParameterFilter.new(described_class.filters(rails_defaults))
    shown = filter.filter("input_tokens" => 12, "output_tokens" => 34, "first_token_ms" => 5.5,
                          "idempotency_key" => "job-1", "api_key" => "sk-1", "access_token" => "t",
                          "password" => "p", "refresh_tokens" => "r", "INPUT_TOKENS_SECRET" => "s")
    expect(shown).to eq("input_tokens" => 12, "output_tokens" => 34, "first_token_ms" => 5.5,
                        "idempotency_key" => "job-1", "api_key" => "[FILTERED]", "access_token" => "[FILTERED]",
                        "password" => "[FILTERED]", "refresh_tokens" => "[FILTERED]",
                        "INPUT_TOKENS_SECRET" => "[FILTERED]")
    # Without the rewrite the defaults hide them all.
    unfiltered = ActiveSupport::ParameterFilter.new(rails_defaults).filter("input_tokens" => 12)
    expect(unfiltered).to eq("input_tokens" => "[FILTERED]")
  end

  it "keeps Regexp and Proc filters working, nested keys untouched, and is idempotent" do
    masker = ->(key, value) { value.replace("masked") if key == "note" }
    filters = described_class.filters([/tok/i, masker, "card.number", /\Aotp\z/])
    expect(described_class.filters(filters)).to eq(filters)
    shown = ActiveSupport::ParameterFilter.new(filters)
                                          .filter("output_tokens" => 1, "tokenizer" => "x", "note" => +"n",
                                                  "otp" => "1", "card" => { "number" => "4242" })
    expect(shown).to eq("output_tokens" => 1, "tokenizer" => "[FILTERED]", "note" => "masked", "otp" => "[FILTERED]",
                        "card" => { "number" => "[FILTERED]" })
  end

  it "shows the counts in a message's #inspect under Rails' default filters" do
    filtered_message.filter_attributes = described_class.filters(rails_defaults)
    chat = Chat.create!(model: "gpt-4o", provider: "openai")
    message = filtered_message.create!(chat_id: chat.id, role: "assistant", content: "hi", input_tokens: 12,
                                       output_tokens: 34, idempotency_key: "job-1")
    expect(message.inspect).to include("input_tokens: 12", "output_tokens: 34", 'idempotency_key: "job-1"')
    filtered_message.filter_attributes = rails_defaults
    expect(message.inspect).to include("input_tokens: [FILTERED]")
  end

  it "is loaded with the integration without loading ActiveRecord::Base" do
    lib = File.expand_path("../../../lib", __dir__)
    script = <<~RUBY
      require "llm_failover/active_record"
      LlmFailover::ActiveRecord::AttemptLog.new
      ActiveSupport.on_load(:active_record) { puts "Base loaded" }
      puts ActiveRecord.autoload?(:Base) ? "Base not loaded" : "Base loaded early"
      ActiveRecord::Base
      puts LlmFailover::ActiveRecord::Attempt.superclass
    RUBY
    output, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", script)
    expect(status).to be_success, output
    expect(output.lines.map(&:chomp)).to eq(["Base not loaded", "Base loaded", "ActiveRecord::Base"])
  end
end
