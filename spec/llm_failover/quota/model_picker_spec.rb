# frozen_string_literal: true

require "spec_helper"

RSpec.describe LlmFailover::ModelPicker do
  let(:exceeded) { LlmFailover::Quota.new(limit: 100, used: 100) }
  let(:under) { LlmFailover::Quota.new(limit: 100, used: 10) }
  let(:unlimited) { LlmFailover::Quota.new(limit: 0, used: 1_000_000) }

  def picker(**options)
    described_class.new(model: "gpt-4o", provider: :openai, **options)
  end

  def with_backup(**options)
    picker(backup_model: "claude-sonnet-4-6", backup_provider: :anthropic, **options)
  end

  describe "#backup?" do
    it "needs both a backup model and a backup provider" do
      expect(with_backup).to be_backup
      expect(picker).not_to be_backup
      expect(picker(backup_model: "claude-sonnet-4-6")).not_to be_backup
      expect(picker(backup_provider: :anthropic)).not_to be_backup
    end

    it "counts an empty or blank name as missing" do
      expect(picker(backup_model: "", backup_provider: :anthropic)).not_to be_backup
      expect(picker(backup_model: "claude", backup_provider: :"")).not_to be_backup
      expect(picker(backup_model: "  ", backup_provider: "anthropic")).not_to be_backup
    end
  end

  describe "#pick and #targets" do
    it "picks the primary, with the backup behind it, when the quota is not exceeded" do
      [nil, under, unlimited].each do |quota|
        p = with_backup(quota: quota)
        expect(p.pick).to eq(["gpt-4o", :openai])
        expect(p.targets).to eq([["gpt-4o", :openai], ["claude-sonnet-4-6", :anthropic]])
      end
    end

    it "picks the backup alone when the primary's quota is exceeded" do
      p = with_backup(quota: exceeded)
      expect(p.pick).to eq(["claude-sonnet-4-6", :anthropic])
      expect(p.targets).to eq([["claude-sonnet-4-6", :anthropic]])
    end

    it "treats a quota of 0 as unlimited" do
      expect(with_backup(quota: unlimited).pick).to eq(["gpt-4o", :openai])
    end

    it "still calls the primary when the quota is exceeded and there is no backup" do
      p = picker(quota: exceeded)
      expect(p.pick).to eq(["gpt-4o", :openai])
      expect(p.targets).to eq([["gpt-4o", :openai]])
    end

    it "does not fail over to half a backup" do
      p = picker(backup_model: "claude-sonnet-4-6", quota: exceeded)
      expect(p.pick).to eq(["gpt-4o", :openai])
      expect(p.targets).to eq([["gpt-4o", :openai]])
    end

    it "has only the primary to try without a backup" do
      expect(picker.targets).to eq([["gpt-4o", :openai]])
    end

    it "re-reads nothing: the same picker answers the same" do
      p = with_backup(quota: exceeded)
      expect(Array.new(3) { p.pick }.uniq).to eq([["claude-sonnet-4-6", :anthropic]])
    end
  end

  describe "enforce_quota" do
    it "raises QuotaExceededError when the quota is exceeded and there is no backup" do
      p = picker(quota: exceeded, enforce_quota: true)
      expect { p.pick }.to raise_error(LlmFailover::QuotaExceededError, /gpt-4o.*openai.*100 of 100.*no backup/)
      expect { p.targets }.to raise_error(LlmFailover::QuotaExceededError)
    end

    it "still fails over to a backup rather than raising" do
      expect(with_backup(quota: exceeded, enforce_quota: true).pick).to eq(["claude-sonnet-4-6", :anthropic])
    end

    it "does not raise under the quota or without one" do
      expect(picker(quota: under, enforce_quota: true).pick).to eq(["gpt-4o", :openai])
      expect(picker(quota: unlimited, enforce_quota: true).pick).to eq(["gpt-4o", :openai])
      expect(picker(enforce_quota: true).pick).to eq(["gpt-4o", :openai])
    end
  end

  describe "validation" do
    it "requires a primary model and provider" do
      expect { described_class.new(model: "", provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError, /model/)
      expect { described_class.new(model: "gpt-4o", provider: nil) }
        .to raise_error(LlmFailover::ConfigurationError, /provider/)
    end

    it "rejects names that are not Strings or Symbols" do
      expect { picker(backup_model: 42, backup_provider: :anthropic) }
        .to raise_error(LlmFailover::ConfigurationError, /backup_model/)
    end

    it "checks model names by the rule Chat uses (ModelName): a String or Symbol, blank is missing" do
      expect(described_class.new(model: :"gpt-4o", provider: :openai).pick).to eq(["gpt-4o", :openai])
      [nil, " "].each do |blank|
        expect { described_class.new(model: blank, provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError)
        expect { LlmFailover.chat(model: blank, provider: :openai) }.to raise_error(LlmFailover::ModelNotFoundError)
      end
      expect { described_class.new(model: 42, provider: :openai) }.to raise_error(LlmFailover::ConfigurationError, /model/)
      expect { LlmFailover.chat(model: 42, provider: :openai) }.to raise_error(LlmFailover::ConfigurationError, /model/)
      LlmFailover.configure { |c| c.provider(:openai, api: :openai, api_key: "k") }
      expect(LlmFailover.chat(model: :"gpt-4o", provider: :openai).model).to eq("gpt-4o")
    end

    it "rejects a quota that is not a Quota" do
      expect { picker(quota: 100) }.to raise_error(LlmFailover::ConfigurationError, /quota/)
    end

    it "rejects an enforce_quota that is not a Boolean" do
      expect { picker(enforce_quota: "yes") }.to raise_error(LlmFailover::ConfigurationError, /enforce_quota/)
    end
  end

  it "inspects readably" do
    expect(with_backup(quota: under).inspect).to eq(
      "#<LlmFailover::ModelPicker primary=gpt-4o@openai backup=claude-sonnet-4-6@anthropic " \
      "quota=#<LlmFailover::Quota limit=100 used=10 remaining=90.0 percent_used=10.0> enforce_quota=false>"
    )
  end
end
