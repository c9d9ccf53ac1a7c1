# frozen_string_literal: true

# config/initializers/llm_failover_offline.rb: what LLM_FAILOVER_FAKE=1 answers in this
# app (doc/rails.md, "Developing offline"). Run after the Railtie started the fake.
Rails.application.config.after_initialize do
  if LlmFailover::Testing::Offline.requested?
    LlmFailover::Testing.fake.on(:openai).default = { error: :overloaded }   # the backup answers every call
  end
end
