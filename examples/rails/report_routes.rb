# frozen_string_literal: true

# config/routes.rb: the report page behind a password of its own (doc/rails.md, "The report
# page"). An app with Devise mounts it inside `authenticate :user, ->(user) { user.admin? }`.
Rails.application.routes.draw do
  report = Rack::Builder.new do
    use Rack::Auth::Basic, "llm_failover report" do |_user, password|
      expected = ENV.fetch("LLM_FAILOVER_REPORT_PASSWORD", "")
      !expected.empty? && ActiveSupport::SecurityUtils.secure_compare(password, expected)
    end
    run LlmFailover::Report::Engine
  end
  mount report => "/llm_failover"

  get "up" => "rails/health#show", as: :rails_health_check # as `rails new` writes it
end
